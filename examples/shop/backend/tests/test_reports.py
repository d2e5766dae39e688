from datetime import datetime, timedelta, timezone

from conftest import NOW, ORWELL
from inkwell.admin.reports import build_sales_report, render_csv


def test_report_counts_only_captured_orders_and_subtracts_refunds(shop, placed_order, dublin):
    cart = shop.carts.open_cart("acct-2")
    shop.carts.add_item(cart.id, ORWELL)
    still_pending = shop.checkout.submit_order(cart.id, "acct-2", "b@example.com", dublin, "tok_visa")
    shop.shipping.create_shipment(placed_order.id, "an-post", "RR1")
    shop.shipping.mark_dispatched(placed_order.id, NOW)
    shop.refunds.refund_order(placed_order.id, [ORWELL], "damaged", NOW)
    start = datetime.now(timezone.utc) - timedelta(days=1)
    report = build_sales_report(list(shop.orders.all()), start, start + timedelta(days=2))
    assert report.order_count == 1
    assert report.gross == placed_order.total and report.refunds.cents == 1050
    assert report.top_sellers[0] == ("Pride and Prejudice", 2)
    assert still_pending.id not in render_csv(report)
    assert "net," + f"{(placed_order.total.cents - 1050) / 100:.2f}" in render_csv(report)
