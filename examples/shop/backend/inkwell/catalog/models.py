"""Catalog entities: a Book is sold by ISBN-13, the identifier publishers and suppliers share."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from enum import Enum

from inkwell.errors import ValidationError
from inkwell.money import Money


class Format(str, Enum):
    HARDCOVER = "hardcover"
    PAPERBACK = "paperback"
    EBOOK = "ebook"
    AUDIOBOOK = "audiobook"

    @property
    def is_digital(self) -> bool:
        return self in (Format.EBOOK, Format.AUDIOBOOK)


@dataclass(frozen=True)
class Category:
    slug: str
    name: str
    parent: str | None = None


@dataclass
class Book:
    isbn: str
    title: str
    authors: list[str]
    price: Money
    format: Format = Format.PAPERBACK
    category: str = "general"
    description: str = ""
    published: date | None = None
    publisher: str = ""
    tags: list[str] = field(default_factory=list)
    listed: bool = True

    def __post_init__(self) -> None:
        self.isbn = normalize_isbn(self.isbn)
        if not self.title.strip():
            raise ValidationError("a book needs a title")
        if not self.authors:
            raise ValidationError(f"book {self.isbn} has no author")
        if self.price.cents <= 0:
            raise ValidationError(f"book {self.isbn} must have a positive price")

    @property
    def display_author(self) -> str:
        if len(self.authors) <= 2:
            return " & ".join(self.authors)
        return f"{self.authors[0]} et al."

    @property
    def ships_physically(self) -> bool:
        return not self.format.is_digital


def normalize_isbn(raw: str) -> str:
    """Strip hyphens and spaces and check the ISBN-13 checksum.

    Suppliers send ISBNs in every punctuation style; the catalog stores one form so
    that a restock file and a customer's search hit the same row.
    """
    digits = raw.replace("-", "").replace(" ", "")
    if len(digits) != 13 or not digits.isdigit():
        raise ValidationError(f"ISBN must have 13 digits: {raw!r}")
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits[:12]))
    check = (10 - total % 10) % 10
    if check != int(digits[12]):
        raise ValidationError(f"ISBN checksum does not match: {raw!r}")
    return digits
