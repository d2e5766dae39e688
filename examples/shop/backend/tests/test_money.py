from decimal import Decimal

import pytest

from inkwell.money import CurrencyMismatch, Money, sum_money


def test_parse_and_format_round_trip():
    assert Money.parse("12.50").cents == 1250
    assert Money(1250).format() == "€12.50"
    assert Money(-5, "GBP").format() == "-£0.05"


def test_parse_rejects_fractions_of_a_cent():
    with pytest.raises(ValueError, match="more than two decimals"):
        Money.parse("1.005")


def test_percent_rounds_half_to_even():
    assert Money(250).percent(Decimal("1")).cents == 2   # 2.5 -> 2
    assert Money(350).percent(Decimal("1")).cents == 4   # 3.5 -> 4


def test_allocate_never_loses_a_cent():
    shares = Money(1000).allocate([1, 1, 1])
    assert [s.cents for s in shares] == [334, 333, 333]
    assert sum_money(shares) == Money(1000)


def test_mixing_currencies_is_an_error():
    with pytest.raises(CurrencyMismatch):
        Money(100, "EUR") + Money(100, "GBP")
