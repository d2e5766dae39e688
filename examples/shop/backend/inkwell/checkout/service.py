"""Checkout: validate, price, reserve stock, authorise payment, then place the order."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inkwell.cart.models import CartStatus
from inkwell.cart.service import CartService
from inkwell.catalog.repository import BookRepository
from inkwell.checkout.pricing import VAT_RATES, Totals, compute_totals
from inkwell.errors import CheckoutError, InventoryError, PaymentError
from inkwell.inventory.stock import StockLedger
from inkwell.money import Money
from inkwell.notifications.emails import EmailOutbox
from inkwell.orders.models import Order, OrderLine
from inkwell.orders.repository import OrderRepository
from inkwell.payments.service import PaymentService
from inkwell.promotions.coupons import CouponService

SHIPPABLE_COUNTRIES = set(VAT_RATES) | {"US", "CA", "AU"}


@dataclass(frozen=True)
class Address:
    name: str
    line1: str
    city: str
    postcode: str
    country: str

    def problems(self) -> list[str]:
        found = []
        if not self.name.strip():
            found.append("recipient name is missing")
        if not self.line1.strip():
            found.append("street address is missing")
        if self.country not in SHIPPABLE_COUNTRIES:
            found.append(f"we do not ship to {self.country!r}")
        if self.country == "GB" and not re.fullmatch(r"[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}", self.postcode.upper()):
            found.append(f"{self.postcode!r} is not a UK postcode")
        return found


class CheckoutService:
    def __init__(
        self,
        carts: CartService,
        books: BookRepository,
        stock: StockLedger,
        orders: OrderRepository,
        payments: PaymentService,
        coupons: CouponService,
        outbox: EmailOutbox,
    ) -> None:
        self._carts, self._books, self._stock = carts, books, stock
        self._orders, self._payments, self._coupons, self._outbox = orders, payments, coupons, outbox

    def quote(self, cart_id: str, account_id: str, country: str, coupon_code: str | None = None) -> Totals:
        cart = self._carts.get(cart_id)
        lines = list(cart.lines.values())
        discount = Money.zero()
        if coupon_code and lines:
            discount = self._coupons.apply_coupon(coupon_code, account_id, cart.subtotal())
        digital = {isbn for isbn in cart.lines if not self._books.get(isbn).ships_physically}
        return compute_totals(lines, country, discount, digital)

    def submit_order(
        self, cart_id: str, account_id: str, email: str, address: Address, card_token: str,
        coupon_code: str | None = None,
    ) -> Order:
        cart = self._carts.get(cart_id)
        if cart.status is not CartStatus.OPEN:
            raise CheckoutError("this cart has already been checked out")
        if cart.is_empty:
            raise CheckoutError("cart is empty")
        if cart.account_id not in (None, account_id):
            raise CheckoutError("cart belongs to another account")
        if problems := address.problems():
            raise CheckoutError("invalid shipping address: " + "; ".join(problems))
        totals = self.quote(cart_id, account_id, address.country, coupon_code)
        order_id = self._orders.next_id()
        physical = {i: l.quantity for i, l in cart.lines.items() if self._books.get(i).ships_physically}
        try:
            self._stock.reserve(order_id, physical)
        except InventoryError as exc:
            raise CheckoutError(f"some books sold out while you were shopping: {exc.message}") from None
        lines = [
            OrderLine(l.isbn, l.title, l.unit_price, l.quantity, d, l.isbn not in physical)
            for l, d in zip(cart.lines.values(), totals.line_discounts)
        ]
        order = Order(order_id, account_id, lines, totals.shipping, totals.tax, email=email, coupon_code=coupon_code)
        try:
            payment = self._payments.authorize_order(order_id, card_token, totals.total)
        except PaymentError:
            self._stock.release(order_id)
            raise
        order.payment_id = payment.id
        if coupon_code:
            self._coupons.redeem(coupon_code, account_id)
        cart.status = CartStatus.CHECKED_OUT
        self._orders.save(order)
        self._outbox.queue("order_confirmation", email, order_id=order.id, total=order.total.format())
        return order
