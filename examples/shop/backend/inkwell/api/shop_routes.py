"""Customer-facing routes: catalog, search, cart, checkout, orders, reviews."""
from __future__ import annotations

from typing import Any

from inkwell.api.auth import login_required
from inkwell.api.http import Request, Response, Router, ok
from inkwell.app import Shop
from inkwell.cart.models import Cart
from inkwell.catalog.models import Book
from inkwell.checkout.service import Address
from inkwell.errors import ValidationError
from inkwell.money import Money


def book_json(book: Book) -> dict[str, Any]:
    return {
        "isbn": book.isbn, "title": book.title, "authors": book.authors,
        "price": book.price.cents, "currency": book.price.currency, "format": book.format.value,
    }


def cart_json(cart: Cart) -> dict[str, Any]:
    return {
        "id": cart.id, "status": cart.status.value, "subtotal": cart.subtotal().cents,
        "lines": [
            {"isbn": l.isbn, "title": l.title, "unitPrice": l.unit_price.cents, "quantity": l.quantity}
            for l in cart.lines.values()
        ],
    }


class ShopRoutes:
    def __init__(self, shop: Shop) -> None:
        self.shop = shop

    def register(self, router: Router) -> None:
        router.add("GET", "/api/books", self.list_books)
        router.add("GET", "/api/books/search", self.search_books)
        router.add("GET", "/api/books/{isbn}", self.get_book)
        router.add("POST", "/api/carts", self.create_cart)
        router.add("POST", "/api/carts/{cart_id}/items", self.add_cart_item)
        router.add("DELETE", "/api/carts/{cart_id}/items/{isbn}", self.remove_cart_item)
        router.add("POST", "/api/checkout", login_required(self.checkout))
        router.add("POST", "/api/books/{isbn}/reviews", login_required(self.post_review))

    def list_books(self, request: Request) -> Response:
        page = self.shop.browser.list_page(
            category=request.query.get("category"), sort=request.query.get("sort", "title"),
            page=int(request.query.get("page", "1")),
        )
        return ok({"items": [book_json(b) for b in page.items], "page": page.page, "pages": page.page_count})

    def search_books(self, request: Request) -> Response:
        max_price = request.query.get("maxPrice")
        result = self.shop.search.search(
            request.query.get("q", ""), max_price=Money.parse(max_price) if max_price else None
        )
        return ok({"hits": [book_json(h.book) for h in result.hits], "didYouMean": result.suggestion})

    def get_book(self, request: Request) -> Response:
        book = self.shop.books.get(request.params["isbn"])
        body = book_json(book) | {
            "description": book.description,
            "available": self.shop.stock.available(book.isbn),
            "rating": self.shop.reviews.average_rating(book.isbn),
        }
        return ok(body)

    def create_cart(self, request: Request) -> Response:
        return ok(cart_json(self.shop.carts.open_cart(request.account_id)), status=201)

    def add_cart_item(self, request: Request) -> Response:
        isbn, quantity = request.require(request.json(), "isbn", "quantity")
        if not isinstance(quantity, int):
            raise ValidationError("quantity must be a whole number")
        return ok(cart_json(self.shop.carts.add_item(request.params["cart_id"], isbn, quantity)))

    def remove_cart_item(self, request: Request) -> Response:
        return ok(cart_json(self.shop.carts.remove_item(request.params["cart_id"], request.params["isbn"])))

    def checkout(self, request: Request) -> Response:
        data = request.json()
        cart_id, email, card_token, addr = request.require(data, "cartId", "email", "cardToken", "address")
        address = Address(**{k: str(addr.get(k, "")) for k in ("name", "line1", "city", "postcode", "country")})
        order = self.shop.checkout.submit_order(
            cart_id, request.account_id or "", email, address, card_token, data.get("coupon")
        )
        return ok({"orderId": order.id, "status": order.status.value, "total": order.total.cents}, status=201)

    def post_review(self, request: Request) -> Response:
        data = request.json()
        rating, title, body = request.require(data, "rating", "title", "body")
        review = self.shop.reviews.submit_review(request.account_id or "", request.params["isbn"], int(rating), title, body)
        return ok({"id": review.id, "status": review.status.value, "verifiedBuyer": review.verified_buyer}, status=201)
