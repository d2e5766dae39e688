"""Full-text book search: title, author and tag matches, with a "did you mean" fallback."""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

from inkwell.catalog.models import Book
from inkwell.catalog.repository import BookRepository
from inkwell.errors import ValidationError
from inkwell.money import Money

FIELD_WEIGHTS = {"title": 3.0, "author": 2.0, "tag": 1.5, "description": 0.5}
STOPWORDS = frozenset({"the", "a", "an", "of", "and", "by", "in", "on"})


@dataclass(frozen=True)
class SearchHit:
    book: Book
    score: float


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    suggestion: str | None = None


def tokenize(text: str) -> list[str]:
    """Lower-case, accent-free word tokens, so "Brontë" finds "Bronte"."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return [t for t in re.findall(r"[a-z0-9]+", folded.lower()) if t not in STOPWORDS]


class BookSearch:
    def __init__(self, books: BookRepository) -> None:
        self._books = books

    def search(
        self, query: str, max_price: Money | None = None, limit: int = 20
    ) -> SearchResult:
        terms = tokenize(query)
        if not terms:
            raise ValidationError("search needs at least one word")
        if len(query) > 200:
            raise ValidationError("search text is longer than 200 characters")
        isbn_hit = self._books.find_by_isbn(query)
        if isbn_hit is not None:
            return SearchResult([SearchHit(isbn_hit, 100.0)])
        hits = []
        for book in self._books.listed():
            if max_price is not None and book.price.cents > max_price.cents:
                continue
            score = score_book(book, terms)
            if score > 0:
                hits.append(SearchHit(book, score))
        hits.sort(key=lambda h: (-h.score, h.book.title.casefold(), h.book.isbn))
        suggestion = None if hits else self.suggest(terms)
        return SearchResult(hits[:limit], suggestion)

    def suggest(self, terms: list[str]) -> str | None:
        vocabulary = sorted({t for b in self._books.listed() for t in tokenize(b.title + " " + " ".join(b.authors))})
        fixed = []
        for term in terms:
            close = difflib.get_close_matches(term, vocabulary, n=1, cutoff=0.75)
            fixed.append(close[0] if close else term)
        return " ".join(fixed) if fixed != terms else None


def score_book(book: Book, terms: list[str]) -> float:
    fields = {
        "title": tokenize(book.title),
        "author": tokenize(" ".join(book.authors)),
        "tag": [t for tag in book.tags for t in tokenize(tag)],
        "description": tokenize(book.description),
    }
    score = 0.0
    for term in terms:
        for name, tokens in fields.items():
            if term in tokens:
                score += FIELD_WEIGHTS[name]
            elif any(tok.startswith(term) for tok in tokens) and len(term) >= 3:
                score += FIELD_WEIGHTS[name] / 2
    matched = sum(1 for term in terms if any(term in tokens for tokens in fields.values()))
    return score * (matched / len(terms))
