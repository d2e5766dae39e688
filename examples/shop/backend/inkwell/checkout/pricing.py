"""Order totals: discount, shipping and VAT. Pure functions, so quotes equal charges."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from inkwell.cart.models import CartLine
from inkwell.errors import CheckoutError
from inkwell.money import Money, sum_money

# Books are zero- or reduced-rated in most of our markets; e-books often are not.
VAT_RATES: dict[str, tuple[Decimal, Decimal]] = {
    # country: (printed book rate, digital book rate)
    "GB": (Decimal("0"), Decimal("0")),
    "IE": (Decimal("0"), Decimal("9")),
    "DE": (Decimal("7"), Decimal("7")),
    "FR": (Decimal("5.5"), Decimal("5.5")),
    "NL": (Decimal("9"), Decimal("9")),
}
SHIPPING_RATES = {"domestic": Money(399), "eu": Money(899), "world": Money(1499)}
FREE_SHIPPING_THRESHOLD = Money(3500)
HOME_COUNTRY = "IE"


@dataclass(frozen=True)
class Totals:
    subtotal: Money
    discount: Money
    shipping: Money
    tax: Money
    line_discounts: tuple[Money, ...]

    @property
    def total(self) -> Money:
        return self.subtotal - self.discount + self.shipping + self.tax


def shipping_zone(country: str) -> str:
    if country == HOME_COUNTRY:
        return "domestic"
    return "eu" if country in VAT_RATES else "world"


def shipping_cost(lines: list[CartLine], digital: set[str], country: str, goods: Money) -> Money:
    if all(line.isbn in digital for line in lines):
        return Money.zero()
    if shipping_zone(country) == "domestic" and goods >= FREE_SHIPPING_THRESHOLD:
        return Money.zero()
    return SHIPPING_RATES[shipping_zone(country)]


def compute_totals(
    lines: list[CartLine], country: str, discount: Money = Money(0), digital: set[str] | None = None
) -> Totals:
    if not lines:
        raise CheckoutError("cart is empty")
    digital = digital or set()
    subtotal = sum_money([line.line_total for line in lines])
    if discount > subtotal:
        discount = subtotal  # a coupon never makes an order negative
    line_discounts = (
        tuple(discount.allocate([line.line_total.cents for line in lines]))
        if discount.cents
        else tuple(Money.zero() for _ in lines)
    )
    printed_rate, digital_rate = VAT_RATES.get(country, (Decimal("0"), Decimal("0")))
    tax = Money.zero()
    for line, line_discount in zip(lines, line_discounts):
        rate = digital_rate if line.isbn in digital else printed_rate
        tax = tax + (line.line_total - line_discount).percent(rate)
    shipping = shipping_cost(lines, digital, country, subtotal - discount)
    return Totals(subtotal, discount, shipping, tax, line_discounts)
