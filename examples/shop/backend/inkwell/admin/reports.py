"""Sales reports for the back office: gross, discounts, refunds and best sellers."""
from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime

from inkwell.errors import ValidationError
from inkwell.money import Money, sum_money
from inkwell.orders.models import Order, OrderStatus

COUNTED = {
    OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.DELIVERED,
    OrderStatus.PARTIALLY_REFUNDED, OrderStatus.REFUNDED,
}


@dataclass(frozen=True)
class SalesReport:
    start: datetime
    end: datetime
    order_count: int
    gross: Money
    discounts: Money
    refunds: Money
    by_day: dict[date, Money]
    top_sellers: list[tuple[str, int]]

    @property
    def net(self) -> Money:
        return self.gross - self.refunds

    @property
    def average_order(self) -> Money:
        if not self.order_count:
            return Money.zero()
        return Money(self.gross.cents // self.order_count, self.gross.currency)


def build_sales_report(orders: list[Order], start: datetime, end: datetime, top: int = 10) -> SalesReport:
    """Only orders whose money was captured count; pending and cancelled orders are left out."""
    if end <= start:
        raise ValidationError("report period must end after it starts")
    counted = [o for o in orders if o.status in COUNTED and start <= o.placed_at < end]
    by_day: dict[date, Money] = defaultdict(Money.zero)
    copies: Counter[str] = Counter()
    for order in counted:
        by_day[order.placed_at.date()] = by_day[order.placed_at.date()] + order.total
        for line in order.lines:
            copies[line.title] += line.quantity
    return SalesReport(
        start=start,
        end=end,
        order_count=len(counted),
        gross=sum_money([o.total for o in counted]),
        discounts=sum_money([line.discount for o in counted for line in o.lines]),
        refunds=sum_money([o.refunded for o in counted]),
        by_day=dict(sorted(by_day.items())),
        top_sellers=sorted(copies.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
    )


def render_csv(report: SalesReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["day", "gross"])
    for day, amount in report.by_day.items():
        writer.writerow([day.isoformat(), f"{amount.cents / 100:.2f}"])
    writer.writerow([])
    writer.writerow(["orders", report.order_count])
    writer.writerow(["gross", f"{report.gross.cents / 100:.2f}"])
    writer.writerow(["discounts", f"{report.discounts.cents / 100:.2f}"])
    writer.writerow(["refunds", f"{report.refunds.cents / 100:.2f}"])
    writer.writerow(["net", f"{report.net.cents / 100:.2f}"])
    return out.getvalue()
