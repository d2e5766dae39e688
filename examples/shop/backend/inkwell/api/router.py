"""Build the full router and serve one request end to end (auth, dispatch, logging)."""
from __future__ import annotations

import logging
import time

from inkwell.api.account_routes import AccountRoutes
from inkwell.api.admin_routes import AdminRoutes
from inkwell.api.auth import authenticate_request
from inkwell.api.http import Request, Response, Router
from inkwell.api.shop_routes import ShopRoutes
from inkwell.app import Shop
from inkwell.errors import InkwellError

log = logging.getLogger("inkwell.api")
SLOW_REQUEST_MS = 500


def build_router(shop: Shop, session_secret: bytes) -> Router:
    if len(session_secret) < 32:
        raise ValueError("session secret must be at least 32 bytes")
    router = Router()
    ShopRoutes(shop).register(router)
    AccountRoutes(shop, session_secret).register(router)
    AdminRoutes(shop).register(router)
    return router


def handle(router: Router, request: Request, session_secret: bytes) -> Response:
    """Authenticate, dispatch and log slow requests; the WSGI adapter calls only this."""
    started = time.perf_counter()
    try:
        authenticate_request(request, session_secret)
    except InkwellError as exc:
        return Response(exc.status, {"error": exc.code, "message": exc.message})
    response = router.dispatch(request)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if elapsed_ms > SLOW_REQUEST_MS:
        log.warning("slow request %s %s took %.0f ms", request.method, request.path, elapsed_ms)
    response.headers["Server-Timing"] = f"app;dur={elapsed_ms:.1f}"
    return response
