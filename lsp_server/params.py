"""Typed arguments of Lamina's requests and commands (docs/lsp.md), decoded once.

pygls hands a custom request's params over as a dict or as namedtuple-like
objects, and a command's arguments as a list; all become plain data, then one
msgspec Struct. Anything else is LAMINA_BAD_INPUT with the expected shape,
never an internal error.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from index.errors import BadInput
from index.query_bounds import MAX_TEXT_CHARS

T = TypeVar("T", bound=msgspec.Struct)


class FolderArgs(msgspec.Struct, kw_only=True):
    folder: str | None = None


class SetTaskArgs(FolderArgs, kw_only=True):
    task: str
    workflow: str | None = None


class GetPacketArgs(FolderArgs, kw_only=True):
    format: Literal["json", "markdown"] = "json"


class PrepareArgs(FolderArgs, kw_only=True):
    task: str
    workflow: str | None = None
    budget: int | None = None
    mode: Literal["summary", "standard", "full"] | None = None
    exclude: list[str] = []
    format: Literal["json", "markdown"] = "json"


class SelectWorkflowArgs(FolderArgs, kw_only=True):
    workflow: str
    task: str | None = None


class SearchArgs(FolderArgs, kw_only=True, rename={"top_k": "topK", "with_text": "withText"}):
    query: str
    top_k: int | None = None
    legs: Literal["lexical", "dense", "hybrid"] = "hybrid"
    group: Literal["file"] | None = None
    with_text: bool = False


class Position(msgspec.Struct):
    line: int
    character: int = 0


class RelevantArgs(FolderArgs, kw_only=True):
    """`folder`: whose graph and packet answer (nested folders: a file is in several)."""

    uri: str
    position: Position


class SpanArgs(FolderArgs, kw_only=True):
    id: str


class WorkflowArgs(FolderArgs, kw_only=True):
    workflow: str
    operation: str | None = None  # the lens of an implemented_by link: open the operation, not the workflow


def plain(x: Any) -> Any:
    """Dicts, lists and scalars only (pygls' namedtuples and attrs objects included)."""
    if hasattr(x, "_asdict"):
        return {k: plain(v) for k, v in x._asdict().items()}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if hasattr(x, "__attrs_attrs__"):
        return {a.name: plain(getattr(x, a.name)) for a in x.__attrs_attrs__}
    return x


def decode(params: Any, kind: type[T], method: str) -> T:
    data = plain(params)
    if data is None:
        data = {}
    if isinstance(data, list):  # workspace/executeCommand arguments: one object
        data = data[0] if data else {}
    if not isinstance(data, dict):
        raise BadInput(
            f"{method} takes one object, got {type(data).__name__}", f"see docs/lsp.md for the arguments of {method}"
        )
    data = {k: v for k, v in data.items() if v is not None}
    try:
        args = msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise BadInput(f"bad arguments for {method}: {exc}", f"see docs/lsp.md for the arguments of {method}") from None
    for field in ("task", "query"):
        value = getattr(args, field, None)
        if isinstance(value, str):
            if not value.strip():
                raise BadInput(f"{method}: {field} is empty", f"pass a non-empty {field}")
            if len(value) > MAX_TEXT_CHARS:
                raise BadInput(
                    f"{method}: {field} has {len(value)} characters (limit {MAX_TEXT_CHARS})",
                    f"shorten the {field}: keep the title, stack frames and error messages",
                )
    return args


def bounded(value: int | None, default: int, lo: int, hi: int, name: str) -> int:
    n = default if value is None else value
    if not lo <= n <= hi:
        raise BadInput(f"{name} must be within {lo}..{hi}, got {n}", f"pass {name} between {lo} and {hi}")
    return n
