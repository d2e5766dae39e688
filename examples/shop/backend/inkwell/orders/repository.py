"""Order storage with the queries the shop and the reports need."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from inkwell.errors import NotFound
from inkwell.orders.models import Order, OrderStatus


class OrderRepository:
    def __init__(self) -> None:
        self._orders: dict[str, Order] = {}
        self._sequence = 1000

    def next_id(self) -> str:
        self._sequence += 1
        return f"INK-{self._sequence}"

    def save(self, order: Order) -> Order:
        self._orders[order.id] = order
        return order

    def get(self, order_id: str) -> Order:
        order = self._orders.get(order_id)
        if order is None:
            raise NotFound(f"order {order_id} does not exist")
        return order

    def get_for_account(self, order_id: str, account_id: str) -> Order:
        """Customers only see their own orders; a foreign id looks like a missing one."""
        order = self.get(order_id)
        if order.account_id != account_id:
            raise NotFound(f"order {order_id} does not exist")
        return order

    def list_for_account(self, account_id: str) -> list[Order]:
        orders = [o for o in self._orders.values() if o.account_id == account_id]
        return sorted(orders, key=lambda o: o.placed_at, reverse=True)

    def with_status(self, *statuses: OrderStatus) -> list[Order]:
        wanted = set(statuses)
        return [o for o in self._orders.values() if o.status in wanted]

    def placed_between(self, start: datetime, end: datetime) -> list[Order]:
        return sorted(
            (o for o in self._orders.values() if start <= o.placed_at < end), key=lambda o: o.placed_at
        )

    def has_purchased(self, account_id: str, isbn: str) -> bool:
        paid = {OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.DELIVERED}
        return any(
            o.account_id == account_id and o.status in paid and any(l.isbn == isbn for l in o.lines)
            for o in self._orders.values()
        )

    def all(self) -> Iterable[Order]:
        return self._orders.values()
