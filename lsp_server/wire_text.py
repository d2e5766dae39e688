"""Text a JSON-RPC message may carry: no lone UTF-16 surrogate.

JSON can escape half of a surrogate pair (`\\ud800`); Python's json reads it into a str that no
UTF-8 codec, tokenizer or file-system call accepts, so deep in a handler it becomes an internal
error. Both servers' readers (the language server's, lsp_server.stdin_reader; the MCP transport,
lsp_server.mcp.transport) refuse a request that holds one, with these words.
"""

from __future__ import annotations

import json
from typing import Any

SURROGATE_MESSAGE = "the message holds a lone UTF-16 surrogate escape (such as \\ud800): it is not text"
SURROGATE_REMEDY = "send strings as valid UTF-8 (or \\u escapes of complete surrogate pairs)"


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string of a parsed message holds a lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def replace_lone_surrogates(value: Any) -> Any:
    """Every lone surrogate in the message's strings as U+FFFD, as a lenient decoder would."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [replace_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): replace_lone_surrogates(v) for k, v in value.items()}
    return value
