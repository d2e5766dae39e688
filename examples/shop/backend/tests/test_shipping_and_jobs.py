from datetime import date, timedelta

import pytest

from conftest import NOW, ORWELL, PRIDE
from inkwell.errors import OrderStateError
from inkwell.inventory.restock import RestockPlanner, SupplierTerms
from inkwell.jobs.queue import JobQueue
from inkwell.jobs.tasks import deliver_outbox, send_shipping_notifications
from inkwell.orders.models import OrderStatus
from inkwell.payments.service import PaymentStatus


def test_dispatch_captures_payment_and_commits_stock(shop, placed_order):
    shop.shipping.create_shipment(placed_order.id, "an-post", " rr123ie ")
    shipment = shop.shipping.mark_dispatched(placed_order.id, NOW)
    assert placed_order.status is OrderStatus.SHIPPED
    assert shop.payments.get(placed_order.payment_id).status is PaymentStatus.CAPTURED
    assert shop.stock.item(PRIDE).on_hand == 10 and shop.stock.item(PRIDE).reserved == 0
    assert shipment.tracking_url.endswith("/RR123IE")
    with pytest.raises(OrderStateError, match="already dispatched"):
        shop.shipping.mark_dispatched(placed_order.id, NOW)


def test_shipping_notification_job_sends_once(shop, placed_order):
    shop.shipping.create_shipment(placed_order.id, "dhl", "JD0001")
    shop.shipping.mark_dispatched(placed_order.id, NOW)
    assert send_shipping_notifications(shop.shipping) == 1
    assert send_shipping_notifications(shop.shipping) == 0
    subjects = [m.subject for m in shop.outbox.for_recipient("nora@example.com")]
    assert f"Your order {placed_order.id} is on its way" in subjects


def test_outbox_delivery_retries_failures_then_gives_up(shop):
    shop.outbox.queue("welcome", "x@example.com", name="X")

    def broken(_message):
        raise OSError("smtp down")

    assert [deliver_outbox(shop.outbox, broken) for _ in range(4)] == [0, 0, 0, 0]
    assert shop.outbox.pending[0].attempts == 3


def test_failing_job_backs_off_then_goes_to_dead_letters():
    queue = JobQueue()
    calls = []
    queue.enqueue("flaky", lambda: calls.append(1) or 1 / 0, at=NOW)
    when = NOW
    for _ in range(5):
        queue.run_pending(when)
        when += timedelta(hours=1)
    assert len(calls) == 5 and queue.dead[0].last_error.startswith("ZeroDivisionError")
    assert queue.retry_dead("flaky") == 1 and queue.pending


def test_restock_plan_covers_lead_time_and_tracks_short_deliveries(shop):
    planner = RestockPlanner(shop.stock, SupplierTerms(lead_time_days=5, minimum_order=5, pack_size=4))
    plan = {line.isbn: line for line in planner.plan_reorders({ORWELL: 1.0}, date(2024, 5, 6))}
    assert plan[ORWELL].quantity == 28  # ceil(1.0 * 19 * 1.5) = 29 - 2 available = 27 -> pack of 4
    assert plan[ORWELL].expected_on == date(2024, 5, 11)
    assert planner.plan_reorders({ORWELL: 1.0}, date(2024, 5, 7)) == []  # already ordered
    planner.receive_shipment(ORWELL, 20)
    still_open = {line.isbn: line.quantity for line in planner.open_orders()}
    assert still_open[ORWELL] == 8
    assert shop.stock.available(ORWELL) == 22
