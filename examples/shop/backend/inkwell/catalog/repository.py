"""Where books live. In-memory here; production swaps in the Postgres repository."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from inkwell.catalog.models import Book, Category, normalize_isbn
from inkwell.errors import NotFound, ValidationError


class BookRepository:
    def __init__(self, books: Iterable[Book] = (), categories: Iterable[Category] = ()) -> None:
        self._books: dict[str, Book] = {}
        self._categories: dict[str, Category] = {c.slug: c for c in categories}
        for book in books:
            self.add(book)

    def add(self, book: Book) -> None:
        if book.isbn in self._books:
            raise ValidationError(f"book {book.isbn} is already in the catalog")
        self._books[book.isbn] = book

    def update(self, book: Book) -> None:
        if book.isbn not in self._books:
            raise NotFound(f"no book with ISBN {book.isbn}")
        self._books[book.isbn] = book

    def get(self, isbn: str) -> Book:
        book = self.find_by_isbn(isbn)
        if book is None:
            raise NotFound(f"no book with ISBN {isbn}")
        return book

    def find_by_isbn(self, isbn: str) -> Book | None:
        try:
            return self._books.get(normalize_isbn(isbn))
        except ValidationError:
            return None

    def listed(self) -> Iterator[Book]:
        """Books a customer may see; delisted books stay for order history only."""
        return (b for b in self._books.values() if b.listed)

    def in_category(self, slug: str) -> list[Book]:
        slugs = {slug} | {c.slug for c in self._categories.values() if c.parent == slug}
        return [b for b in self.listed() if b.category in slugs]

    def category(self, slug: str) -> Category:
        try:
            return self._categories[slug]
        except KeyError:
            raise NotFound(f"no category {slug!r}") from None

    def categories(self) -> list[Category]:
        return sorted(self._categories.values(), key=lambda c: c.name)

    def __len__(self) -> int:
        return len(self._books)
