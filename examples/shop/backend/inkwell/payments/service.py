"""Payments for orders: authorise at checkout, capture at dispatch, with safe retries."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from inkwell.errors import NotFound, PaymentError
from inkwell.money import Money
from inkwell.payments.gateway import GatewayDeclined, GatewayTimeout, PaymentGateway

MAX_ATTEMPTS = 4
BASE_DELAY_SECONDS = 0.5


class PaymentStatus(str, Enum):
    AUTHORIZED = "authorized"
    CAPTURED = "captured"
    VOIDED = "voided"
    FAILED = "failed"


@dataclass
class Payment:
    id: str
    order_id: str
    amount: Money
    authorization: str
    status: PaymentStatus = PaymentStatus.AUTHORIZED
    capture_reference: str | None = None
    captured: Money = field(default_factory=Money.zero)
    refunded: Money = field(default_factory=Money.zero)
    attempts: int = 0


def with_retries(call: Callable[[], object], sleep: Callable[[float], None] = time.sleep) -> object:
    """Retry timeouts with exponential backoff. Safe only because callers reuse one idempotency key."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return call()
        except GatewayTimeout:
            if attempt == MAX_ATTEMPTS:
                raise PaymentError("the payment provider is not responding; please try again later") from None
            sleep(BASE_DELAY_SECONDS * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


class PaymentService:
    def __init__(self, gateway: PaymentGateway, sleep: Callable[[float], None] = time.sleep) -> None:
        self._gateway = gateway
        self._sleep = sleep
        self._payments: dict[str, Payment] = {}

    def authorize_order(self, order_id: str, card_token: str, amount: Money) -> Payment:
        key = f"authorize-{order_id}"
        try:
            result = with_retries(lambda: self._gateway.authorize(card_token, amount, key), self._sleep)
        except GatewayDeclined as exc:
            raise PaymentError(f"your card was declined: {exc.reason}") from None
        payment = Payment(f"pay_{order_id}", order_id, amount, result.reference)  # type: ignore[attr-defined]
        self._payments[payment.id] = payment
        return payment

    def get(self, payment_id: str) -> Payment:
        payment = self._payments.get(payment_id)
        if payment is None:
            raise NotFound(f"payment {payment_id} does not exist")
        return payment

    def capture(self, payment_id: str) -> Payment:
        """Capture the authorised amount exactly once, even when called again after a timeout."""
        payment = self.get(payment_id)
        if payment.status is PaymentStatus.CAPTURED:
            return payment  # a second capture request is a no-op, not a second charge
        if payment.status is not PaymentStatus.AUTHORIZED:
            raise PaymentError(f"payment {payment.id} is {payment.status.value} and cannot be captured")
        key = f"capture-{payment.id}"
        payment.attempts += 1
        try:
            result = with_retries(
                lambda: self._gateway.capture(payment.authorization, payment.amount, key), self._sleep
            )
        except GatewayDeclined as exc:
            payment.status = PaymentStatus.FAILED
            raise PaymentError(f"capture of {payment.id} was refused: {exc.reason}") from None
        payment.status = PaymentStatus.CAPTURED
        payment.capture_reference = result.reference  # type: ignore[attr-defined]
        payment.captured = payment.amount
        return payment

    def void(self, payment_id: str) -> Payment:
        payment = self.get(payment_id)
        if payment.status is not PaymentStatus.AUTHORIZED:
            raise PaymentError(f"only an authorised payment can be voided, {payment.id} is {payment.status.value}")
        self._gateway.void(payment.authorization, f"void-{payment.id}")
        payment.status = PaymentStatus.VOIDED
        return payment

    def record_webhook(self, event: dict[str, str]) -> Payment | None:
        """Apply a processor webhook; unknown or replayed events are ignored."""
        payment = self._payments.get(event.get("payment_id", ""))
        if payment is None:
            return None
        if event.get("type") == "capture.succeeded" and payment.status is PaymentStatus.AUTHORIZED:
            payment.status = PaymentStatus.CAPTURED
            payment.capture_reference = event.get("reference")
            payment.captured = payment.amount
        elif event.get("type") == "authorization.expired" and payment.status is PaymentStatus.AUTHORIZED:
            payment.status = PaymentStatus.VOIDED
        return payment
