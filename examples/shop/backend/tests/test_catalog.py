import pytest

from inkwell.catalog.models import Book, normalize_isbn
from inkwell.errors import ValidationError
from inkwell.money import Money


def test_isbn_is_normalised_and_checked():
    assert normalize_isbn("978-0-14-143951-8") == "9780141439518"
    with pytest.raises(ValidationError, match="checksum"):
        normalize_isbn("978-0-14-143951-9")


def test_book_needs_a_positive_price():
    with pytest.raises(ValidationError, match="positive price"):
        Book("9780141439518", "Free book", ["Nobody"], Money(0))


def test_search_ranks_title_matches_first(shop):
    result = shop.search.search("pride")
    assert result.hits[0].book.title == "Pride and Prejudice"


def test_search_ignores_accents(shop):
    titles = [h.book.title for h in shop.search.search("bronte").hits]
    assert titles == ["Wuthering Heights"]


def test_search_suggests_a_spelling_when_nothing_matches(shop):
    result = shop.search.search("orwel nineteeen")
    assert result.hits == []
    assert result.suggestion == "orwell nineteen"
    assert shop.search.search("austin").suggestion == "austen"


def test_search_finds_by_isbn(shop):
    assert shop.search.search("978-0-06-112008-4").hits[0].book.title == "To Kill a Mockingbird"


def test_empty_search_is_rejected(shop):
    with pytest.raises(ValidationError, match="at least one word"):
        shop.search.search("the of")


def test_category_page_includes_subcategories_and_sorts_by_price(shop):
    page = shop.browser.list_page(category="fiction", sort="price-asc", page_size=3)
    assert [b.price.cents for b in page.items] == [450, 650, 799]
    assert page.total == 7 and page.page_count == 3 and page.has_next
