import pytest

from conftest import ORWELL, PRIDE, WUTHERING
from inkwell.checkout.pricing import compute_totals
from inkwell.checkout.service import Address
from inkwell.errors import CheckoutError, PaymentError
from inkwell.orders.models import OrderStatus
from inkwell.promotions.coupons import Coupon
from decimal import Decimal


def test_empty_cart_cannot_be_checked_out(shop, dublin):
    cart = shop.carts.open_cart("acct-1")
    with pytest.raises(CheckoutError, match="cart is empty"):
        shop.checkout.submit_order(cart.id, "acct-1", "a@example.com", dublin, "tok_visa")


def test_submit_order_reserves_stock_and_authorises(shop, placed_order):
    assert placed_order.status is OrderStatus.PENDING
    assert shop.stock.available(ORWELL) == 1
    assert shop.stock.item(ORWELL).reserved == 1
    # 2 x 8.99 + 10.50 = 28.48 < 35 -> domestic shipping, zero-rated printed books in IE
    assert placed_order.total.cents == 2848 + 399
    assert shop.outbox.for_recipient("nora@example.com")[0].template == "order_confirmation"


def test_declined_card_releases_the_reservation(shop, dublin):
    cart = shop.carts.open_cart("acct-1")
    shop.carts.add_item(cart.id, ORWELL, 2)
    with pytest.raises(PaymentError, match="declined"):
        shop.checkout.submit_order(cart.id, "acct-1", "a@example.com", dublin, "tok_declined")
    assert shop.stock.available(ORWELL) == 2


def test_invalid_address_lists_every_problem(shop):
    cart = shop.carts.open_cart("acct-1")
    shop.carts.add_item(cart.id, PRIDE)
    bad = Address("", "1 High St", "London", "NOPE", "GB")
    with pytest.raises(CheckoutError, match="recipient name is missing; 'NOPE' is not a UK postcode"):
        shop.checkout.submit_order(cart.id, "acct-1", "a@example.com", bad, "tok_visa")


def test_coupon_discount_is_spread_over_lines_and_redeemed(shop, dublin):
    shop.coupons.register(Coupon("spring10", percent_off=Decimal(10)))
    cart = shop.carts.open_cart("acct-1")
    shop.carts.add_item(cart.id, PRIDE, 2)
    shop.carts.add_item(cart.id, ORWELL, 1)
    order = shop.checkout.submit_order(cart.id, "acct-1", "a@example.com", dublin, "tok_visa", "SPRING10")
    assert sum(line.discount.cents for line in order.lines) == 285  # 10% of 28.48, half-even
    with pytest.raises(Exception, match="already used"):
        shop.coupons.validate_coupon("SPRING10", "acct-1", order.total)


def test_ebook_only_orders_ship_free_and_pay_digital_vat():
    from inkwell.cart.models import CartLine
    from inkwell.money import Money

    lines = [CartLine(WUTHERING, "Wuthering Heights", Money(450), 1)]
    totals = compute_totals(lines, "IE", digital={WUTHERING})
    assert totals.shipping.cents == 0
    assert totals.tax.cents == 40  # 9% of 4.50 = 0.405 -> 0.40
