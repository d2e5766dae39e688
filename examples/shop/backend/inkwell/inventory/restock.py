"""Supplier reorders: how many copies to buy so a bestseller does not run dry."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

from inkwell.errors import InventoryError
from inkwell.inventory.stock import StockLedger


@dataclass(frozen=True)
class ReorderLine:
    isbn: str
    quantity: int
    expected_on: date


@dataclass(frozen=True)
class SupplierTerms:
    lead_time_days: int = 7
    minimum_order: int = 5
    pack_size: int = 1


class RestockPlanner:
    def __init__(self, ledger: StockLedger, terms: SupplierTerms | None = None) -> None:
        self._ledger = ledger
        self._terms = terms or SupplierTerms()
        self._open_orders: dict[str, ReorderLine] = {}

    def plan_reorders(self, daily_sales: dict[str, float], today: date) -> list[ReorderLine]:
        """Reorder enough to cover lead time plus two weeks, with safety stock of 50%."""
        plan = []
        for item in self._ledger.below_reorder_point():
            if item.isbn in self._open_orders:
                continue  # a supplier order is already on its way
            rate = max(daily_sales.get(item.isbn, 0.0), 0.1)
            cover_days = self._terms.lead_time_days + 14
            target = math.ceil(rate * cover_days * 1.5)
            quantity = max(self._terms.minimum_order, target - item.available)
            quantity = self._round_to_pack(quantity)
            line = ReorderLine(item.isbn, quantity, today + timedelta(days=self._terms.lead_time_days))
            self._open_orders[item.isbn] = line
            plan.append(line)
        return plan

    def _round_to_pack(self, quantity: int) -> int:
        pack = self._terms.pack_size
        return -(-quantity // pack) * pack

    def receive_shipment(self, isbn: str, quantity: int) -> int:
        """Book a supplier delivery into stock; a short delivery keeps the reorder open."""
        line = self._open_orders.get(isbn)
        if line is None:
            raise InventoryError(f"no open supplier order for {isbn}")
        if quantity <= 0:
            raise InventoryError("a delivery must contain at least one copy")
        self._ledger.receive(isbn, quantity)
        if quantity >= line.quantity:
            del self._open_orders[isbn]
        else:
            self._open_orders[isbn] = ReorderLine(isbn, line.quantity - quantity, line.expected_on)
        return self._ledger.available(isbn)

    def open_orders(self) -> list[ReorderLine]:
        return sorted(self._open_orders.values(), key=lambda line: line.isbn)
