"""Cart operations. Stock is checked here but only reserved at checkout."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from inkwell.cart.models import Cart, CartLine, CartStatus
from inkwell.catalog.repository import BookRepository
from inkwell.errors import CartError, InventoryError, NotFound
from inkwell.inventory.stock import StockLedger

MAX_QUANTITY_PER_LINE = 10
MAX_LINES = 50
ABANDONED_AFTER = timedelta(days=14)


class CartService:
    def __init__(self, books: BookRepository, stock: StockLedger) -> None:
        self._books = books
        self._stock = stock
        self._carts: dict[str, Cart] = {}

    def open_cart(self, account_id: str | None = None) -> Cart:
        cart = Cart(id=uuid.uuid4().hex, account_id=account_id)
        self._carts[cart.id] = cart
        return cart

    def get(self, cart_id: str) -> Cart:
        cart = self._carts.get(cart_id)
        if cart is None:
            raise NotFound(f"cart {cart_id} does not exist")
        return cart

    def _open(self, cart_id: str) -> Cart:
        cart = self.get(cart_id)
        if cart.status is not CartStatus.OPEN:
            raise CartError(f"cart is {cart.status.value} and can no longer be changed")
        return cart

    def add_item(self, cart_id: str, isbn: str, quantity: int = 1) -> Cart:
        if quantity < 1:
            raise CartError("quantity must be at least 1")
        cart = self._open(cart_id)
        book = self._books.get(isbn)
        if not book.listed:
            raise CartError(f"{book.title} is no longer sold")
        line = cart.lines.get(book.isbn)
        new_quantity = quantity + (line.quantity if line else 0)
        if new_quantity > MAX_QUANTITY_PER_LINE:
            raise CartError(f"at most {MAX_QUANTITY_PER_LINE} copies of one book per order")
        if line is None and len(cart.lines) >= MAX_LINES:
            raise CartError(f"a cart holds at most {MAX_LINES} different books")
        if book.ships_physically and self._stock.available(book.isbn) < new_quantity:
            raise InventoryError(f"only {self._stock.available(book.isbn)} copies of {book.title} left")
        if line is None:
            cart.lines[book.isbn] = CartLine(book.isbn, book.title, book.price, new_quantity)
        else:
            line.quantity = new_quantity
        cart.touch()
        return cart

    def update_quantity(self, cart_id: str, isbn: str, quantity: int) -> Cart:
        cart = self._open(cart_id)
        if isbn not in cart.lines:
            raise CartError(f"book {isbn} is not in the cart")
        if quantity == 0:
            return self.remove_item(cart_id, isbn)
        line = cart.lines.pop(isbn)
        try:
            return self.add_item(cart_id, isbn, quantity)
        except Exception:
            cart.lines[isbn] = line
            raise

    def remove_item(self, cart_id: str, isbn: str) -> Cart:
        cart = self._open(cart_id)
        if cart.lines.pop(isbn, None) is None:
            raise CartError(f"book {isbn} is not in the cart")
        cart.touch()
        return cart

    def merge_guest_cart(self, guest_cart_id: str, account_cart_id: str) -> Cart:
        """After login, fold the guest cart into the account's cart, capping quantities."""
        guest = self._open(guest_cart_id)
        target = self._open(account_cart_id)
        for isbn, line in guest.lines.items():
            existing = target.lines.get(isbn)
            quantity = min(MAX_QUANTITY_PER_LINE, line.quantity + (existing.quantity if existing else 0))
            target.lines[isbn] = CartLine(isbn, line.title, line.unit_price, quantity)
        guest.status = CartStatus.ABANDONED
        target.touch()
        return target

    def expire_abandoned(self, now: datetime | None = None) -> list[str]:
        now = now or datetime.now(timezone.utc)
        expired = []
        for cart in self._carts.values():
            if cart.status is CartStatus.OPEN and now - cart.updated_at > ABANDONED_AFTER:
                cart.status = CartStatus.ABANDONED
                expired.append(cart.id)
        return expired
