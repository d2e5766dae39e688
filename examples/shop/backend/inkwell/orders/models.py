"""Orders and the only state transitions they may take."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from inkwell.errors import OrderStateError
from inkwell.money import Money, sum_money


class OrderStatus(str, Enum):
    PENDING = "pending"          # submitted, payment authorised, stock reserved
    PAID = "paid"                # payment captured
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"        # fully refunded
    PARTIALLY_REFUNDED = "partially_refunded"


ALLOWED_TRANSITIONS: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.PENDING: frozenset({OrderStatus.PAID, OrderStatus.CANCELLED}),
    OrderStatus.PAID: frozenset(
        {OrderStatus.SHIPPED, OrderStatus.DELIVERED, OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED}
    ),
    OrderStatus.SHIPPED: frozenset({OrderStatus.DELIVERED, OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED}),
    OrderStatus.DELIVERED: frozenset({OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED}),
    OrderStatus.PARTIALLY_REFUNDED: frozenset({OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED}),
    OrderStatus.CANCELLED: frozenset(),
    OrderStatus.REFUNDED: frozenset(),
}


@dataclass(frozen=True)
class OrderLine:
    isbn: str
    title: str
    unit_price: Money
    quantity: int
    discount: Money
    digital: bool = False

    @property
    def paid(self) -> Money:
        return self.unit_price.times(self.quantity) - self.discount


@dataclass
class Order:
    id: str
    account_id: str
    lines: list[OrderLine]
    shipping: Money
    tax: Money
    status: OrderStatus = OrderStatus.PENDING
    email: str = ""
    coupon_code: str | None = None
    payment_id: str | None = None
    refunded: Money = field(default_factory=Money.zero)
    refunded_isbns: set[str] = field(default_factory=set)
    placed_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    history: list[tuple[OrderStatus, datetime]] = field(default_factory=list)

    @property
    def total(self) -> Money:
        return sum_money([line.paid for line in self.lines]) + self.shipping + self.tax

    @property
    def refundable(self) -> Money:
        return self.total - self.refunded

    def transition_to(self, status: OrderStatus, now: datetime | None = None) -> None:
        if status not in ALLOWED_TRANSITIONS[self.status]:
            raise OrderStateError(f"order {self.id} cannot go from {self.status.value} to {status.value}")
        self.history.append((status, now or datetime.now(timezone.utc)))
        self.status = status

    def entered_at(self, status: OrderStatus) -> datetime | None:
        """When the order first reached ``status``; None if it never did."""
        if status is OrderStatus.PENDING:
            return self.placed_at
        for entered, at in self.history:
            if entered is status:
                return at
        return None
