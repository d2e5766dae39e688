"""Shipments: packing a paid order, handing it to a carrier, tracking delivery."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum

from inkwell.errors import NotFound, OrderStateError, ValidationError
from inkwell.inventory.stock import StockLedger
from inkwell.notifications.emails import EmailOutbox
from inkwell.orders.models import OrderStatus
from inkwell.orders.repository import OrderRepository
from inkwell.payments.service import PaymentService

TRACKING_URLS = {
    "an-post": "https://track.anpost.example/{number}",
    "dhl": "https://dhl.example/track?id={number}",
    "royal-mail": "https://royalmail.example/track/{number}",
}


class ShipmentStatus(str, Enum):
    PACKED = "packed"
    DISPATCHED = "dispatched"
    DELIVERED = "delivered"


@dataclass
class Shipment:
    order_id: str
    carrier: str
    tracking_number: str
    status: ShipmentStatus = ShipmentStatus.PACKED
    dispatched_at: datetime | None = None
    notified: bool = False

    @property
    def tracking_url(self) -> str:
        return TRACKING_URLS[self.carrier].format(number=self.tracking_number)


class ShippingService:
    def __init__(
        self, orders: OrderRepository, payments: PaymentService, stock: StockLedger, outbox: EmailOutbox
    ) -> None:
        self._orders, self._payments, self._stock, self._outbox = orders, payments, stock, outbox
        self._shipments: dict[str, Shipment] = {}

    def create_shipment(self, order_id: str, carrier: str, tracking_number: str) -> Shipment:
        order = self._orders.get(order_id)
        if carrier not in TRACKING_URLS:
            raise ValidationError(f"unknown carrier {carrier!r}")
        if order.status is not OrderStatus.PENDING:
            raise OrderStateError(f"order {order_id} is {order.status.value}; only pending orders are packed")
        if all(line.digital for line in order.lines):
            raise ValidationError(f"order {order_id} has only e-books; nothing to ship")
        shipment = Shipment(order_id, carrier, tracking_number.strip().upper())
        self._shipments[order_id] = shipment
        return shipment

    def mark_dispatched(self, order_id: str, now: datetime | None = None) -> Shipment:
        """Capture payment, take the books off the shelf, then tell the customer.

        Payment is captured at dispatch, not at checkout: we only charge for what we send.
        """
        now = now or datetime.now(timezone.utc)
        shipment = self.get(order_id)
        if shipment.status is not ShipmentStatus.PACKED:
            raise OrderStateError(f"shipment for {order_id} was already dispatched")
        order = self._orders.get(order_id)
        self._payments.capture(order.payment_id or "")
        order.transition_to(OrderStatus.PAID, now)
        self._stock.commit(order_id)
        order.transition_to(OrderStatus.SHIPPED, now)
        shipment.status = ShipmentStatus.DISPATCHED
        shipment.dispatched_at = now
        return shipment

    def mark_delivered(self, order_id: str, now: datetime | None = None) -> Shipment:
        shipment = self.get(order_id)
        if shipment.status is not ShipmentStatus.DISPATCHED:
            raise OrderStateError(f"shipment for {order_id} has not been dispatched")
        shipment.status = ShipmentStatus.DELIVERED
        self._orders.get(order_id).transition_to(OrderStatus.DELIVERED, now)
        return shipment

    def deliver_digital(self, order_id: str, now: datetime | None = None) -> None:
        """E-book-only orders skip the warehouse: capture and unlock the download at once."""
        order = self._orders.get(order_id)
        if not all(line.digital for line in order.lines):
            raise ValidationError(f"order {order_id} contains printed books; pack a shipment instead")
        self._payments.capture(order.payment_id or "")
        order.transition_to(OrderStatus.PAID, now)
        order.transition_to(OrderStatus.DELIVERED, now)

    def get(self, order_id: str) -> Shipment:
        shipment = self._shipments.get(order_id)
        if shipment is None:
            raise NotFound(f"order {order_id} has no shipment")
        return shipment

    def unnotified(self) -> list[Shipment]:
        return [s for s in self._shipments.values() if s.status is ShipmentStatus.DISPATCHED and not s.notified]

    def notify_customer(self, shipment: Shipment) -> None:
        order = self._orders.get(shipment.order_id)
        self._outbox.queue(
            "shipping_notification", order.email,
            order_id=order.id, carrier=shipment.carrier, tracking_url=shipment.tracking_url,
        )
        shipment.notified = True
