import json
from datetime import datetime, timezone

from conftest import ORWELL, PRIDE
from inkwell.api.auth import sign_session
from inkwell.api.http import Request
from inkwell.api.router import build_router, handle

SECRET = b"s" * 32


def call(router, method, path, body=None, token=None, query=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = Request(method, path, json.dumps(body).encode() if body else b"", headers, query or {})
    return handle(router, request, SECRET)


def test_guest_can_fill_a_cart_but_must_log_in_to_check_out(shop):
    router = build_router(shop, SECRET)
    cart = call(router, "POST", "/api/carts").body
    response = call(router, "POST", f"/api/carts/{cart['id']}/items", {"isbn": PRIDE, "quantity": 2})
    assert response.status == 200 and response.body["subtotal"] == 1798
    denied = call(router, "POST", "/api/checkout", {"cartId": cart["id"]})
    assert denied.status == 401 and denied.body["message"] == "please log in first"


def test_checkout_over_http_places_an_order(shop):
    router = build_router(shop, SECRET)
    token = call(router, "POST", "/api/accounts", {"email": "ann@example.com", "name": "Ann", "password": "lovely long secret"}).body["session"]
    cart = call(router, "POST", "/api/carts", token=token).body
    call(router, "POST", f"/api/carts/{cart['id']}/items", {"isbn": ORWELL, "quantity": 1}, token)
    address = {"name": "Ann", "line1": "1 Quay St", "city": "Galway", "postcode": "H91", "country": "IE"}
    placed = call(router, "POST", "/api/checkout", {"cartId": cart["id"], "email": "ann@example.com", "cardToken": "tok_visa", "address": address}, token)
    assert placed.status == 201 and placed.body["status"] == "pending"
    assert call(router, "GET", "/api/orders", token=token).body[0]["id"] == placed.body["orderId"]


def test_admin_routes_need_an_admin_session(shop):
    router = build_router(shop, SECRET)
    customer = sign_session("acct-1", False, SECRET)
    admin = sign_session("acct-2", True, SECRET)
    query = {"from": "2024-01-01", "to": "2024-02-01"}
    assert call(router, "GET", "/admin/reports/sales", token=customer, query=query).status == 403
    report = call(router, "GET", "/admin/reports/sales", token=admin, query=query)
    assert report.status == 200 and report.body["orders"] == 0


def test_errors_map_to_statuses(shop):
    router = build_router(shop, SECRET)
    assert call(router, "GET", "/api/books/9780000000000").status == 404
    assert call(router, "PUT", "/api/carts").status == 405
    tampered = sign_session("acct-1", False, SECRET)[:-4] + "AAAA"
    assert call(router, "GET", "/api/orders", token=tampered).status == 401
