"""Just enough HTTP: a request/response pair and a router with path parameters.

The WSGI adapter in deploy/ turns these into real responses; handlers never see WSGI.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inkwell.errors import InkwellError

log = logging.getLogger("inkwell.api")

Handler = Callable[["Request"], "Response"]


@dataclass
class Request:
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    account_id: str | None = None
    is_admin: bool = False

    def json(self) -> dict[str, Any]:
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except json.JSONDecodeError as exc:
            raise InkwellError(f"request body is not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise InkwellError("request body must be a JSON object")
        return data

    def require(self, data: dict[str, Any], *names: str) -> list[Any]:
        missing = [n for n in names if data.get(n) in (None, "")]
        if missing:
            raise InkwellError(f"missing field(s): {', '.join(missing)}")
        return [data[n] for n in names]


@dataclass
class Response:
    status: int
    body: dict[str, Any] | list[Any]
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})

    def encoded(self) -> bytes:
        return json.dumps(self.body, default=str, sort_keys=True).encode()


def ok(body: dict[str, Any] | list[Any], status: int = 200) -> Response:
    return Response(status, body)


class Router:
    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self._routes.append((method.upper(), re.compile(f"^{regex}$"), handler))

    def dispatch(self, request: Request) -> Response:
        allowed = []
        for method, regex, handler in self._routes:
            match = regex.match(request.path)
            if not match:
                continue
            if method != request.method.upper():
                allowed.append(method)
                continue
            request.params = match.groupdict()
            try:
                return handler(request)
            except InkwellError as exc:
                return Response(exc.status, {"error": exc.code, "message": exc.message})
            except Exception:
                log.exception("unhandled error on %s %s", request.method, request.path)
                return Response(500, {"error": "internal", "message": "something went wrong on our side"})
        if allowed:
            return Response(405, {"error": "method_not_allowed", "allowed": sorted(set(allowed))})
        return Response(404, {"error": "not_found", "message": f"no route for {request.path}"})
