"""The card processor boundary. Every call carries an idempotency key so a retry never charges twice."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from inkwell.money import Money


class GatewayTimeout(Exception):
    """The processor did not answer; the call may or may not have taken effect."""


class GatewayDeclined(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GatewayResult:
    reference: str
    amount: Money
    idempotency_key: str


class PaymentGateway(Protocol):
    def authorize(self, card_token: str, amount: Money, idempotency_key: str) -> GatewayResult: ...

    def capture(self, authorization: str, amount: Money, idempotency_key: str) -> GatewayResult: ...

    def refund(self, capture: str, amount: Money, idempotency_key: str) -> GatewayResult: ...

    def void(self, authorization: str, idempotency_key: str) -> None: ...


class SandboxGateway:
    """In-memory processor used in tests and local development.

    It behaves like the real one where it matters: repeated idempotency keys return the
    first result, captures cannot exceed the authorisation, refunds cannot exceed captures.
    """

    DECLINED_TOKENS = {"tok_declined": "card declined", "tok_expired": "card expired"}

    def __init__(self) -> None:
        self.authorized: dict[str, Money] = {}
        self.captured: dict[str, Money] = {}
        self.refunded: dict[str, Money] = {}
        self._seen: dict[str, GatewayResult] = {}
        self.fail_next_calls = 0
        self.calls = 0

    def _replay_or_fail(self, key: str) -> GatewayResult | None:
        self.calls += 1
        if key in self._seen:
            return self._seen[key]
        if self.fail_next_calls > 0:
            self.fail_next_calls -= 1
            raise GatewayTimeout("sandbox: simulated timeout")
        return None

    def authorize(self, card_token: str, amount: Money, idempotency_key: str) -> GatewayResult:
        if (seen := self._replay_or_fail(idempotency_key)) is not None:
            return seen
        if card_token in self.DECLINED_TOKENS:
            raise GatewayDeclined(self.DECLINED_TOKENS[card_token])
        result = GatewayResult(f"auth_{uuid.uuid4().hex[:12]}", amount, idempotency_key)
        self.authorized[result.reference] = amount
        self._seen[idempotency_key] = result
        return result

    def capture(self, authorization: str, amount: Money, idempotency_key: str) -> GatewayResult:
        if (seen := self._replay_or_fail(idempotency_key)) is not None:
            return seen
        if amount > self.authorized.get(authorization, Money.zero()):
            raise GatewayDeclined("capture exceeds authorisation")
        result = GatewayResult(f"cap_{authorization[5:]}", amount, idempotency_key)
        self.captured[result.reference] = self.captured.get(result.reference, Money.zero()) + amount
        self._seen[idempotency_key] = result
        return result

    def refund(self, capture: str, amount: Money, idempotency_key: str) -> GatewayResult:
        if (seen := self._replay_or_fail(idempotency_key)) is not None:
            return seen
        already = self.refunded.get(capture, Money.zero())
        if already + amount > self.captured.get(capture, Money.zero()):
            raise GatewayDeclined("refund exceeds captured amount")
        result = GatewayResult(f"ref_{uuid.uuid4().hex[:12]}", amount, idempotency_key)
        self.refunded[capture] = already + amount
        self._seen[idempotency_key] = result
        return result

    def void(self, authorization: str, idempotency_key: str) -> None:
        self._replay_or_fail(idempotency_key)
        self.authorized.pop(authorization, None)
