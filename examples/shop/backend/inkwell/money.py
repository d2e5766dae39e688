"""Money in integer minor units, so totals, taxes and refunds never drift by a cent."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation


class CurrencyMismatch(ValueError):
    """Raised when two amounts in different currencies are combined."""


@dataclass(frozen=True, order=True)
class Money:
    cents: int
    currency: str = "EUR"

    @classmethod
    def zero(cls, currency: str = "EUR") -> Money:
        return cls(0, currency)

    @classmethod
    def parse(cls, text: str, currency: str = "EUR") -> Money:
        """Parse a user-facing amount such as "12.50"; rejects fractions of a cent."""
        try:
            value = Decimal(text.strip())
        except InvalidOperation as exc:
            raise ValueError(f"not an amount: {text!r}") from exc
        if value.as_tuple().exponent < -2:  # type: ignore[operator]
            raise ValueError(f"amount has more than two decimals: {text!r}")
        return cls(int(value * 100), currency)

    def _check(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatch(f"cannot combine {self.currency} and {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.cents + other.cents, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.cents - other.cents, self.currency)

    def times(self, quantity: int) -> Money:
        return Money(self.cents * quantity, self.currency)

    def percent(self, rate: Decimal | int | str) -> Money:
        """A percentage of this amount, rounded half-to-even (banker's rounding)."""
        exact = Decimal(self.cents) * Decimal(rate) / Decimal(100)
        return Money(int(exact.quantize(Decimal(1), rounding=ROUND_HALF_EVEN)), self.currency)

    def allocate(self, weights: list[int]) -> list[Money]:
        """Split this amount by weights; the leftover cents go to the first shares.

        Used to spread an order-level discount over its lines so that a partial
        refund returns exactly what the customer paid for those lines.
        """
        if not weights or sum(weights) <= 0:
            raise ValueError("allocation needs at least one positive weight")
        total = sum(weights)
        shares = [self.cents * w // total for w in weights]
        remainder = self.cents - sum(shares)
        for i in range(remainder):
            shares[i % len(shares)] += 1
        return [Money(s, self.currency) for s in shares]

    def is_negative(self) -> bool:
        return self.cents < 0

    def format(self) -> str:
        sign = "-" if self.cents < 0 else ""
        whole, frac = divmod(abs(self.cents), 100)
        symbol = {"EUR": "€", "GBP": "£", "USD": "$"}.get(self.currency, self.currency + " ")
        return f"{sign}{symbol}{whole}.{frac:02d}"


def sum_money(amounts: list[Money], currency: str = "EUR") -> Money:
    total = Money.zero(currency)
    for amount in amounts:
        total = total + amount
    return total
