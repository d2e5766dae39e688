"""Refunds: who may get money back, how much, and putting returned books back on the shelf."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from inkwell.errors import RefundError
from inkwell.inventory.stock import StockLedger
from inkwell.money import Money, sum_money
from inkwell.orders.models import Order, OrderStatus
from inkwell.orders.repository import OrderRepository
from inkwell.payments.gateway import GatewayDeclined, PaymentGateway
from inkwell.payments.service import PaymentService, PaymentStatus, with_retries

REFUND_WINDOW = timedelta(days=30)
REFUNDABLE = {OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.DELIVERED, OrderStatus.PARTIALLY_REFUNDED}


@dataclass(frozen=True)
class RefundPolicy:
    window: timedelta = REFUND_WINDOW

    def is_eligible(self, order: Order, isbns: list[str], now: datetime) -> tuple[bool, str]:
        """Whether these lines may be refunded, and if not, the reason to show the customer."""
        if order.status not in REFUNDABLE:
            return False, f"order {order.id} is {order.status.value}"
        clock_starts = order.entered_at(OrderStatus.DELIVERED) or order.placed_at
        if now - clock_starts > self.window:
            return False, f"the {self.window.days}-day refund window has closed"
        lines = {line.isbn: line for line in order.lines}
        for isbn in isbns:
            if isbn not in lines:
                return False, f"book {isbn} is not part of order {order.id}"
            if isbn in order.refunded_isbns:
                return False, f"book {isbn} has already been refunded"
            if lines[isbn].digital and order.entered_at(OrderStatus.DELIVERED):
                return False, "downloaded e-books cannot be refunded"
        return True, "eligible"


class RefundService:
    def __init__(
        self,
        orders: OrderRepository,
        payments: PaymentService,
        gateway: PaymentGateway,
        stock: StockLedger,
        policy: RefundPolicy | None = None,
    ) -> None:
        self._orders = orders
        self._payments = payments
        self._gateway = gateway
        self._stock = stock
        self._policy = policy or RefundPolicy()

    def refund_order(self, order_id: str, isbns: list[str], reason: str, now: datetime | None = None) -> Money:
        """Refund the paid amount of the given lines (all remaining lines when ``isbns`` is empty)."""
        now = now or datetime.now(timezone.utc)
        order = self._orders.get(order_id)
        isbns = isbns or [line.isbn for line in order.lines if line.isbn not in order.refunded_isbns]
        ok, why = self._policy.is_eligible(order, isbns, now)
        if not ok:
            raise RefundError(f"refund refused: {why}")
        payment = self._payments.get(order.payment_id or "")
        if payment.status is not PaymentStatus.CAPTURED or payment.capture_reference is None:
            raise RefundError(f"payment for {order.id} was never captured; void it instead")
        amount = sum_money([line.paid for line in order.lines if line.isbn in isbns])
        if set(isbns) | order.refunded_isbns == {line.isbn for line in order.lines}:
            amount = order.refundable  # the last refund returns shipping and tax too
        if amount > payment.captured - payment.refunded:
            raise RefundError(f"refund of {amount.format()} exceeds what was captured")
        key = f"refund-{order.id}-{'-'.join(sorted(isbns))}"
        try:
            with_retries(lambda: self._gateway.refund(payment.capture_reference, amount, key))  # type: ignore[arg-type]
        except GatewayDeclined as exc:
            raise RefundError(f"the payment provider refused the refund: {exc.reason}") from None
        payment.refunded = payment.refunded + amount
        order.refunded = order.refunded + amount
        order.refunded_isbns |= set(isbns)
        full = order.refundable.cents <= 0
        order.transition_to(OrderStatus.REFUNDED if full else OrderStatus.PARTIALLY_REFUNDED, now)
        if order.entered_at(OrderStatus.SHIPPED) is None:
            self._stock.release(order.id, isbns)  # never left the warehouse
        else:
            for line in order.lines:
                if line.isbn in isbns and not line.digital:
                    self._stock.restock_returned(line.isbn, line.quantity)
        return amount
