import pytest

from inkwell.errors import PaymentError
from inkwell.money import Money
from inkwell.payments.gateway import SandboxGateway
from inkwell.payments.service import PaymentService, PaymentStatus


def make_service():
    gateway = SandboxGateway()
    delays: list[float] = []
    return gateway, PaymentService(gateway, sleep=delays.append), delays


def test_capture_retries_timeouts_with_backoff():
    gateway, payments, delays = make_service()
    payment = payments.authorize_order("INK-1", "tok_visa", Money(2000))
    gateway.fail_next_calls = 2
    payments.capture(payment.id)
    assert payment.status is PaymentStatus.CAPTURED
    assert delays == [0.5, 1.0]


def test_capture_twice_charges_once():
    gateway, payments, _ = make_service()
    payment = payments.authorize_order("INK-2", "tok_visa", Money(2000))
    payments.capture(payment.id)
    payments.capture(payment.id)
    assert gateway.captured[payment.capture_reference] == Money(2000)


def test_retry_after_lost_response_reuses_the_idempotency_key():
    gateway, payments, _ = make_service()
    payment = payments.authorize_order("INK-3", "tok_visa", Money(1500))
    gateway.capture(payment.authorization, Money(1500), f"capture-{payment.id}")  # first call "timed out"
    payments.capture(payment.id)
    assert sum(m.cents for m in gateway.captured.values()) == 1500


def test_gateway_down_gives_a_customer_message():
    gateway, payments, delays = make_service()
    payment = payments.authorize_order("INK-4", "tok_visa", Money(1000))
    gateway.fail_next_calls = 10
    with pytest.raises(PaymentError, match="not responding"):
        payments.capture(payment.id)
    assert len(delays) == 3 and payment.status is PaymentStatus.AUTHORIZED


def test_webhook_capture_is_applied_once():
    _, payments, _ = make_service()
    payment = payments.authorize_order("INK-5", "tok_visa", Money(1000))
    event = {"type": "capture.succeeded", "payment_id": payment.id, "reference": "cap_x"}
    payments.record_webhook(event)
    payments.record_webhook(event)
    assert payment.status is PaymentStatus.CAPTURED and payment.captured == Money(1000)
    assert payments.record_webhook({"type": "capture.succeeded", "payment_id": "nope"}) is None
