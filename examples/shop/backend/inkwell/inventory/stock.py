"""Stock ledger: on-hand counts minus reservations held by pending orders."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from inkwell.errors import InventoryError


@dataclass
class StockItem:
    isbn: str
    on_hand: int = 0
    reserved: int = 0
    reorder_point: int = 3

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved


class StockLedger:
    def __init__(self) -> None:
        self._items: dict[str, StockItem] = {}
        self._reservations: dict[str, dict[str, int]] = defaultdict(dict)

    def item(self, isbn: str) -> StockItem:
        return self._items.setdefault(isbn, StockItem(isbn))

    def available(self, isbn: str) -> int:
        return self.item(isbn).available

    def receive(self, isbn: str, quantity: int) -> StockItem:
        if quantity <= 0:
            raise InventoryError("a delivery must contain at least one copy")
        item = self.item(isbn)
        item.on_hand += quantity
        return item

    def reserve(self, order_id: str, quantities: dict[str, int]) -> None:
        """Reserve every line or none: a half-reserved order would block other buyers."""
        short = {isbn: q for isbn, q in quantities.items() if self.available(isbn) < q}
        if short:
            listing = ", ".join(f"{isbn} (wanted {q}, have {self.available(isbn)})" for isbn, q in sorted(short.items()))
            raise InventoryError(f"not enough stock: {listing}")
        for isbn, quantity in quantities.items():
            self.item(isbn).reserved += quantity
            self._reservations[order_id][isbn] = quantity

    def release(self, order_id: str, isbns: list[str] | None = None) -> None:
        """Give reserved copies back, e.g. when payment fails or the order is cancelled."""
        held = self._reservations.get(order_id, {})
        for isbn in list(held) if isbns is None else [i for i in isbns if i in held]:
            self.item(isbn).reserved -= held.pop(isbn)
        if not held:
            self._reservations.pop(order_id, None)

    def commit(self, order_id: str) -> None:
        """Turn a reservation into a shipment: copies leave the warehouse."""
        reservation = self._reservations.pop(order_id, None)
        if reservation is None:
            raise InventoryError(f"order {order_id} holds no reservation")
        for isbn, quantity in reservation.items():
            item = self.item(isbn)
            item.reserved -= quantity
            item.on_hand -= quantity

    def restock_returned(self, isbn: str, quantity: int) -> None:
        self.item(isbn).on_hand += quantity

    def below_reorder_point(self) -> list[StockItem]:
        return sorted(
            (i for i in self._items.values() if i.available <= i.reorder_point), key=lambda i: i.isbn
        )
