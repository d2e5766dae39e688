"""Account routes: sign-up, login, password reset, order history."""
from __future__ import annotations

from inkwell.accounts.reset import issue_password_reset_token, redeem_password_reset_token
from inkwell.api.auth import login_required, sign_session
from inkwell.api.http import Request, Response, Router, ok
from inkwell.app import Shop
from inkwell.errors import RateLimited


class AccountRoutes:
    def __init__(self, shop: Shop, session_secret: bytes) -> None:
        self.shop = shop
        self.secret = session_secret

    def register(self, router: Router) -> None:
        router.add("POST", "/api/accounts", self.sign_up)
        router.add("POST", "/api/sessions", self.log_in)
        router.add("POST", "/api/password-resets", self.request_reset)
        router.add("POST", "/api/password-resets/confirm", self.confirm_reset)
        router.add("GET", "/api/orders", login_required(self.my_orders))
        router.add("POST", "/api/orders/{order_id}/refund-requests", login_required(self.request_refund))

    def sign_up(self, request: Request) -> Response:
        email, name, password = request.require(request.json(), "email", "name", "password")
        account = self.shop.accounts.sign_up(email, name, password)
        token = sign_session(account.id, False, self.secret)
        return ok({"accountId": account.id, "session": token}, status=201)

    def log_in(self, request: Request) -> Response:
        email, password = request.require(request.json(), "email", "password")
        account = self.shop.accounts.authenticate(email, password)
        return ok({"accountId": account.id, "session": sign_session(account.id, account.is_staff, self.secret)})

    def request_reset(self, request: Request) -> Response:
        (email,) = request.require(request.json(), "email")
        try:
            issue_password_reset_token(self.shop.resets, self.shop.accounts, self.shop.outbox, email)
        except RateLimited:
            pass  # same answer as success: the form must not reveal anything
        return ok({"message": "If that address has an account, we have emailed a reset link."}, status=202)

    def confirm_reset(self, request: Request) -> Response:
        token, password = request.require(request.json(), "token", "password")
        redeem_password_reset_token(self.shop.resets, self.shop.accounts, token, password)
        return ok({"message": "Your password has been changed. Please log in."})

    def my_orders(self, request: Request) -> Response:
        orders = self.shop.orders.list_for_account(request.account_id or "")
        return ok([
            {"id": o.id, "status": o.status.value, "total": o.total.cents, "placedAt": o.placed_at.isoformat()}
            for o in orders
        ])

    def request_refund(self, request: Request) -> Response:
        order = self.shop.orders.get_for_account(request.params["order_id"], request.account_id or "")
        data = request.json()
        amount = self.shop.refunds.refund_order(order.id, list(data.get("isbns", [])), str(data.get("reason", "")))
        self.shop.outbox.queue("refund_issued", order.email, order_id=order.id, amount=amount.format())
        return ok({"refunded": amount.cents, "status": order.status.value})
