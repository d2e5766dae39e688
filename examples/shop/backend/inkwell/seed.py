"""Demo catalog used by local development, the docs and the tests."""
from __future__ import annotations

from datetime import date

from inkwell.catalog.models import Book, Category, Format
from inkwell.catalog.repository import BookRepository
from inkwell.inventory.stock import StockLedger
from inkwell.money import Money

CATEGORIES = [
    Category("fiction", "Fiction"),
    Category("classics", "Classics", parent="fiction"),
    Category("crime", "Crime & Thrillers", parent="fiction"),
    Category("non-fiction", "Non-fiction"),
]

BOOKS = [
    Book("978-0-14-143951-8", "Pride and Prejudice", ["Jane Austen"], Money(899), category="classics",
         description="Elizabeth Bennet and Mr Darcy misjudge each other.", published=date(1813, 1, 28),
         tags=["romance", "regency"]),
    Book("978-0-06-112008-4", "To Kill a Mockingbird", ["Harper Lee"], Money(1099), category="classics",
         description="A lawyer defends a black man in 1930s Alabama.", published=date(1960, 7, 11)),
    Book("978-0-7432-7356-5", "The Great Gatsby", ["F. Scott Fitzgerald"], Money(999), category="classics",
         published=date(1925, 4, 10), tags=["jazz age"]),
    Book("978-0-452-28423-4", "Nineteen Eighty-Four", ["George Orwell"], Money(1050), category="classics",
         description="Big Brother is watching you.", published=date(1949, 6, 8), tags=["dystopia"]),
    Book("978-0-14-118776-1", "The Murder of Roger Ackroyd", ["Agatha Christie"], Money(799), category="crime",
         published=date(1926, 6, 1), tags=["detective", "poirot"]),
    Book("978-1-85326-000-1", "Wuthering Heights", ["Emily Brontë"], Money(450), category="classics",
         format=Format.EBOOK, published=date(1847, 12, 1)),
    Book("978-0-593-09932-2", "The Bookshop Handbook", ["Ada Quill", "Tom Ledger", "Ines Folio"], Money(2499),
         category="non-fiction", description="Running an independent bookshop, from stock to tills.",
         published=date(2021, 3, 4), tags=["business"]),
    Book("978-0-19-953556-9", "Frankenstein", ["Mary Shelley"], Money(650), category="classics",
         format=Format.HARDCOVER, published=date(1818, 1, 1), tags=["gothic", "science fiction"]),
]

OPENING_STOCK = {
    "9780141439518": 12, "9780061120084": 4, "9780743273565": 7, "9780452284234": 2,
    "9780141187761": 9, "9780593099322": 3, "9780199535569": 1,
}


def seed(books: BookRepository, stock: StockLedger) -> None:
    """Fill an empty shop; safe to call once per process."""
    for category in CATEGORIES:
        books._categories[category.slug] = category
    for book in BOOKS:
        books.add(Book(**{**book.__dict__, "tags": list(book.tags), "authors": list(book.authors)}))
    for isbn, copies in OPENING_STOCK.items():
        stock.receive(isbn, copies)
