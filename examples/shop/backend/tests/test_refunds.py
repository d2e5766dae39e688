from datetime import timedelta

import pytest

from conftest import NOW, ORWELL, PRIDE
from inkwell.errors import RefundError
from inkwell.orders.models import OrderStatus


def ship(shop, order, when=NOW):
    shop.shipping.create_shipment(order.id, "an-post", "rr123ie")
    shop.shipping.mark_dispatched(order.id, when)


def test_refund_before_capture_is_refused(shop, placed_order):
    with pytest.raises(RefundError, match="is pending"):
        shop.refunds.refund_order(placed_order.id, [], "changed my mind", NOW)


def test_partial_refund_returns_the_lines_paid_amount_and_restocks(shop, placed_order):
    ship(shop, placed_order)
    on_shelf = shop.stock.item(ORWELL).on_hand
    amount = shop.refunds.refund_order(placed_order.id, [ORWELL], "damaged", NOW + timedelta(days=3))
    assert amount.cents == 1050
    assert placed_order.status is OrderStatus.PARTIALLY_REFUNDED
    assert shop.stock.item(ORWELL).on_hand == on_shelf + 1


def test_full_refund_after_partial_refund_returns_the_rest(shop, placed_order):
    ship(shop, placed_order)
    shop.refunds.refund_order(placed_order.id, [ORWELL], "damaged", NOW)
    rest = shop.refunds.refund_order(placed_order.id, [], "all of it", NOW)
    assert rest.cents == placed_order.total.cents - 1050
    assert placed_order.status is OrderStatus.REFUNDED
    with pytest.raises(RefundError, match="is refunded"):
        shop.refunds.refund_order(placed_order.id, [PRIDE], "again", NOW)


def test_refund_window_closes_thirty_days_after_delivery(shop, placed_order):
    ship(shop, placed_order)
    shop.shipping.mark_delivered(placed_order.id, NOW + timedelta(days=2))
    ok, why = shop.refunds._policy.is_eligible(placed_order, [PRIDE], NOW + timedelta(days=33))
    assert not ok and why == "the 30-day refund window has closed"
    ok, _ = shop.refunds._policy.is_eligible(placed_order, [PRIDE], NOW + timedelta(days=31))
    assert ok
