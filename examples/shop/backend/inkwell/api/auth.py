"""Session tokens (HMAC-signed, stateless) and the guards handlers use."""
from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable

from inkwell.api.http import Request, Response
from inkwell.errors import AuthError, Forbidden

SESSION_SECONDS = 14 * 24 * 3600


def sign_session(account_id: str, is_admin: bool, secret: bytes, now: float | None = None) -> str:
    expires = int((now or time.time()) + SESSION_SECONDS)
    payload = f"{account_id}:{int(is_admin)}:{expires}"
    signature = hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()
    return base64.urlsafe_b64encode(f"{payload}:{signature}".encode()).decode()


def read_session(token: str, secret: bytes, now: float | None = None) -> tuple[str, bool]:
    try:
        account_id, admin, expires, signature = base64.urlsafe_b64decode(token).decode().split(":")
    except (ValueError, UnicodeDecodeError):
        raise AuthError("session token is malformed") from None
    expected = hmac.new(secret, f"{account_id}:{admin}:{expires}".encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature, expected):
        raise AuthError("session token signature is invalid")
    if int(expires) < (now or time.time()):
        raise AuthError("session expired; please log in again")
    return account_id, admin == "1"


def authenticate_request(request: Request, secret: bytes) -> None:
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        request.account_id, request.is_admin = read_session(header[7:], secret)


def login_required(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
    def guarded(request: Request) -> Response:
        if request.account_id is None:
            raise AuthError("please log in first")
        return handler(request)

    return guarded


def admin_required(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
    def guarded(request: Request) -> Response:
        if request.account_id is None:
            raise AuthError("please log in first")
        if not request.is_admin:
            raise Forbidden("this page is for shop staff only")
        return handler(request)

    return guarded
