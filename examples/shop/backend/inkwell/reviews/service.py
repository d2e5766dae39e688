"""Reviews: one per customer per book, verified-buyer badge, moderated before publishing."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from inkwell.catalog.repository import BookRepository
from inkwell.errors import Forbidden, NotFound, ValidationError
from inkwell.orders.repository import OrderRepository
from inkwell.reviews.moderation import Verdict, screen_review_text

MIN_BODY, MAX_BODY = 20, 5000


@dataclass
class Review:
    id: str
    isbn: str
    account_id: str
    rating: int
    title: str
    body: str
    verified_buyer: bool
    status: Verdict
    moderation_notes: tuple[str, ...] = ()
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


class ReviewService:
    def __init__(self, books: BookRepository, orders: OrderRepository, require_purchase: bool = False) -> None:
        self._books = books
        self._orders = orders
        self._require_purchase = require_purchase
        self._reviews: dict[str, Review] = {}

    def submit_review(self, account_id: str, isbn: str, rating: int, title: str, body: str) -> Review:
        book = self._books.get(isbn)
        if not 1 <= rating <= 5:
            raise ValidationError("rating must be between 1 and 5 stars")
        if not MIN_BODY <= len(body.strip()) <= MAX_BODY:
            raise ValidationError(f"a review must be between {MIN_BODY} and {MAX_BODY} characters")
        if any(r.account_id == account_id and r.isbn == book.isbn for r in self._reviews.values()):
            raise ValidationError("you have already reviewed this book; edit your review instead")
        bought = self._orders.has_purchased(account_id, book.isbn)
        if self._require_purchase and not bought:
            raise Forbidden("only customers who bought this book can review it")
        screening = screen_review_text(title, body)
        if screening.verdict is Verdict.REJECT:
            raise ValidationError("review rejected: " + "; ".join(screening.reasons))
        review = Review(
            uuid.uuid4().hex, book.isbn, account_id, rating, title.strip(), body.strip(),
            bought, screening.verdict, screening.reasons,
        )
        self._reviews[review.id] = review
        return review

    def moderate(self, review_id: str, approve: bool) -> Review:
        review = self._reviews.get(review_id)
        if review is None:
            raise NotFound(f"review {review_id} does not exist")
        if review.status is not Verdict.HOLD:
            raise ValidationError(f"review {review_id} is not waiting for moderation")
        review.status = Verdict.PUBLISH if approve else Verdict.REJECT
        return review

    def published_for(self, isbn: str) -> list[Review]:
        reviews = [r for r in self._reviews.values() if r.isbn == isbn and r.status is Verdict.PUBLISH]
        return sorted(reviews, key=lambda r: (not r.verified_buyer, r.created_at))

    def average_rating(self, isbn: str) -> float | None:
        reviews = self.published_for(isbn)
        if not reviews:
            return None
        return round(sum(r.rating for r in reviews) / len(reviews), 1)
