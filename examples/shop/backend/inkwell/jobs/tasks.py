"""The scheduled tasks. Each is idempotent: running it twice does no harm."""
from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone

from inkwell.admin.reports import build_sales_report, render_csv
from inkwell.cart.service import CartService
from inkwell.inventory.restock import RestockPlanner
from inkwell.inventory.stock import StockLedger
from inkwell.notifications.emails import EmailOutbox, EmailMessage
from inkwell.orders.repository import OrderRepository
from inkwell.shipping.service import ShippingService

OPERATIONS_EMAIL = "ops@inkwellbooks.example"


def send_shipping_notifications(shipping: ShippingService) -> int:
    sent = 0
    for shipment in shipping.unnotified():
        shipping.notify_customer(shipment)
        sent += 1
    return sent


def deliver_outbox(outbox: EmailOutbox, send: Callable[[EmailMessage], None], max_attempts: int = 3) -> int:
    """Hand queued emails to the mail provider; a failing message is retried next run."""
    delivered = 0
    for message in list(outbox.pending):
        if message.attempts >= max_attempts:
            continue
        message.attempts += 1
        try:
            send(message)
        except OSError:
            continue
        outbox.mark_sent(message)
        delivered += 1
    return delivered


def expire_abandoned_carts(carts: CartService, now: datetime | None = None) -> int:
    return len(carts.expire_abandoned(now))


def low_stock_alert(stock: StockLedger, planner: RestockPlanner, outbox: EmailOutbox, today: date) -> int:
    low = stock.below_reorder_point()
    if not low:
        return 0
    planner.plan_reorders({}, today)
    listing = "\n".join(f"{item.isbn}: {item.available} available" for item in low)
    outbox.queue("low_stock_report", OPERATIONS_EMAIL, count=len(low), listing=listing)
    return len(low)


def nightly_sales_report(orders: OrderRepository, now: datetime | None = None) -> str:
    """Yesterday's sales as CSV, written where the finance team picks it up."""
    now = now or datetime.now(timezone.utc)
    end = now.replace(hour=0, minute=0, second=0, microsecond=0)
    report = build_sales_report(orders.placed_between(end - timedelta(days=1), end), end - timedelta(days=1), end)
    return render_csv(report)
