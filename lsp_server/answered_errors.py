"""A request answered with a Lamina error is an answer, not a server failure.

pygls logs every error response at ERROR with the full traceback; a bad argument, a folder
left unopened or an index still building would each write ~2.5 KB of traceback to stderr,
which the editor shows in its output channel ("never a traceback" is the rule for coded
errors). Those records become one INFO line; an internal error keeps its traceback.
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException

PYGLS_LOGGER = "pygls.protocol.json_rpc"


def lamina_code(exc: BaseException | None) -> str | None:
    """The LAMINA_ code an error answer carries, None for anything else (and for LAMINA_INTERNAL)."""
    if not isinstance(exc, JsonRpcException) or not isinstance(exc.data, dict):
        return None
    code = exc.data.get("code")
    if isinstance(code, str) and code.startswith("LAMINA_") and code != "LAMINA_INTERNAL":
        return code
    return None


class AnsweredErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if lamina_code(exc) is None:
            return True
        record.msg = "request answered with %s"
        record.args = (str(exc),)
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.INFO, "INFO"
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


def install() -> None:
    logger = logging.getLogger(PYGLS_LOGGER)
    if not any(isinstance(f, AnsweredErrors) for f in logger.filters):
        logger.addFilter(AnsweredErrors())
