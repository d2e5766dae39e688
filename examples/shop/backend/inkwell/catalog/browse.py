"""Catalog browsing: category pages with sorting and stable pagination."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Generic, TypeVar

from inkwell.catalog.models import Book
from inkwell.catalog.repository import BookRepository
from inkwell.errors import ValidationError

T = TypeVar("T")

MAX_PAGE_SIZE = 60
SORT_KEYS = ("title", "price-asc", "price-desc", "newest")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    page: int
    page_size: int
    total: int

    @property
    def page_count(self) -> int:
        return max(1, -(-self.total // self.page_size))

    @property
    def has_next(self) -> bool:
        return self.page < self.page_count


class CatalogBrowser:
    def __init__(self, books: BookRepository) -> None:
        self._books = books

    def list_page(
        self, category: str | None = None, sort: str = "title", page: int = 1, page_size: int = 24
    ) -> Page[Book]:
        if sort not in SORT_KEYS:
            raise ValidationError(f"unknown sort {sort!r}; expected one of {', '.join(SORT_KEYS)}")
        if page < 1:
            raise ValidationError("page numbers start at 1")
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValidationError(f"page size must be between 1 and {MAX_PAGE_SIZE}")
        books = self._books.in_category(category) if category else list(self._books.listed())
        books = sort_books(books, sort)
        start = (page - 1) * page_size
        return Page(books[start : start + page_size], page, page_size, len(books))


def sort_books(books: list[Book], sort: str) -> list[Book]:
    """Sort with the ISBN as the last key so that pages never reshuffle between requests."""
    if sort == "price-asc":
        return sorted(books, key=lambda b: (b.price.cents, b.isbn))
    if sort == "price-desc":
        return sorted(books, key=lambda b: (-b.price.cents, b.isbn))
    if sort == "newest":
        return sorted(books, key=lambda b: (-(b.published or date.min).toordinal(), b.isbn))
    return sorted(books, key=lambda b: (b.title.casefold(), b.isbn))
