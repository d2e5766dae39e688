"""The server's typed options: `initializationOptions`, and the part `didChangeConfiguration` may change."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from index.config import Commits, Years
from index.errors import BadInput
from index.packet import DEFAULT_BUDGET, DEFAULT_MODE

DEFAULT_EMBED_THREADS = 1  # background embedding leaves the other core to the editor


class Settings(msgspec.Struct, kw_only=True, rename="camel"):
    index_dir: str | None = None
    ignore: list[str] = []
    # ranges as every other caller checks them (the CLI, lamina/search): a value out of range is
    # refused here, where the editor's setting is named, not by every later request
    budget: Annotated[int, Meta(ge=1, le=10_000_000)] = DEFAULT_BUDGET
    mode: Literal["summary", "standard", "full"] = DEFAULT_MODE  # type: ignore[assignment]
    top_k: Annotated[int, Meta(ge=1, le=1000)] = 10
    ranked_lenses: bool = True
    execute_commands: bool = True
    watch: bool = True
    embed_threads: Annotated[int, Meta(ge=0, le=1024)] = DEFAULT_EMBED_THREADS  # 0: every core
    # The history leg's bound (lsp_server.history_bound); None: the environment's, else the
    # repository's .lamina/config.toml, else the default.
    history_max_commits: Commits | None = None
    history_max_years: Years | None = None


def decode_settings(raw: Any, base: Settings | None = None) -> Settings:
    """Options from the client, unknown keys ignored; a wrong type is LAMINA_BAD_INPUT."""
    data = dict(msgspec.to_builtins(base)) if base is not None else {}
    if isinstance(raw, dict):
        data.update({k: v for k, v in raw.items() if v is not None})
    try:
        return msgspec.convert(data, Settings)
    except msgspec.ValidationError as exc:
        raise BadInput(f"invalid Lamina settings: {exc}", "fix the lamina.* settings of the editor") from None


def decode_initialization(raw: Any) -> tuple[Settings, BadInput | None]:
    """`initializationOptions`: a bad value is skipped, not the whole set. The valid keys apply and
    the refusal names the others, for the server to show once (the server must start either way)."""
    if not isinstance(raw, dict):
        return Settings(), BadInput(
            f"initializationOptions must be an object of Lamina settings, got {type(raw).__name__}; the defaults apply",
            "send them as an object (docs/lsp.md lists the keys, their types and ranges)",
        )
    try:
        return decode_settings(raw), None
    except BadInput:
        pass
    kept: dict[str, Any] = {}
    bad: list[str] = []
    for key, value in raw.items() if isinstance(raw, dict) else ():
        try:
            decode_settings({**kept, key: value})
        except BadInput:
            bad.append(key)
            continue
        kept[key] = value
    return decode_settings(kept), BadInput(
        f"invalid Lamina settings, ignored: {', '.join(sorted(bad))}; the others apply",
        "fix those lamina.* settings of the editor (docs/lsp.md lists their types and ranges)",
    )


def live_update(current: Settings, raw: Any) -> Settings:
    """Apply only the live-changeable keys of a `{"lamina": {...}}` configuration change."""
    section = raw.get("lamina") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        return current
    names = {"budget": "budget", "mode": "mode", "topK": "top_k", "rankedLenses": "ranked_lenses"}
    picked = {k: v for k, v in section.items() if k in names and v is not None}
    return decode_settings(picked, current) if picked else current
