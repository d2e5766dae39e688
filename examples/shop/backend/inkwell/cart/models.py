"""A cart holds lines keyed by ISBN; prices are snapshotted when a line is added."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from inkwell.money import Money, sum_money


class CartStatus(str, Enum):
    OPEN = "open"
    CHECKED_OUT = "checked_out"
    ABANDONED = "abandoned"


@dataclass
class CartLine:
    isbn: str
    title: str
    unit_price: Money
    quantity: int

    @property
    def line_total(self) -> Money:
        return self.unit_price.times(self.quantity)


@dataclass
class Cart:
    id: str
    account_id: str | None = None  # None for a guest cart
    lines: dict[str, CartLine] = field(default_factory=dict)
    status: CartStatus = CartStatus.OPEN
    coupon_code: str | None = None
    updated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def is_empty(self) -> bool:
        return not self.lines

    @property
    def item_count(self) -> int:
        return sum(line.quantity for line in self.lines.values())

    def subtotal(self) -> Money:
        return sum_money([line.line_total for line in self.lines.values()])

    def touch(self, now: datetime | None = None) -> None:
        self.updated_at = now or datetime.now(timezone.utc)
