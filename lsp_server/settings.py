"""The server's typed options: `initializationOptions`, and the part `didChangeConfiguration` may change."""

from __future__ import annotations

import difflib
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


KNOWN_KEYS = [f.encode_name for f in msgspec.structs.fields(Settings)]


def decode_settings(raw: Any, base: Settings | None = None) -> Settings:
    """Options from the client, unknown keys ignored; a wrong type is LAMINA_BAD_INPUT."""
    data = dict(msgspec.to_builtins(base)) if base is not None else {}
    if isinstance(raw, dict):
        data.update({k: v for k, v in raw.items() if v is not None})
    try:
        return msgspec.convert(data, Settings)
    except msgspec.ValidationError as exc:
        raise BadInput(f"invalid Lamina settings: {exc}", "fix the lamina.* settings of the editor") from None


def _each_valid(raw: dict[str, Any], base: Settings | None = None) -> tuple[Settings, list[str]]:
    """The settings with every valid key of `raw` applied, and the keys whose value is not valid."""
    try:
        return decode_settings(raw, base), []
    except BadInput:
        pass
    kept: dict[str, Any] = {}
    bad: list[str] = []
    for key, value in raw.items():
        try:
            decode_settings({**kept, key: value}, base)
        except BadInput:
            bad.append(key)
            continue
        kept[key] = value
    return decode_settings(kept, base), bad


def _unknown(raw: dict[str, Any]) -> list[str]:
    """Keys no setting has, each with the one it most likely meant (`topk` -> `topK`)."""
    out = []
    for key in raw:
        if key in KNOWN_KEYS:
            continue
        near = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6) or [
            k for k in KNOWN_KEYS if k.lower() == key.lower()
        ]
        out.append(f"{key} (did you mean {near[0]}?)" if near else key)
    return out


def decode_initialization(raw: Any) -> tuple[Settings, BadInput | None]:
    """`initializationOptions`: a bad value is skipped, not the whole set. The valid keys apply and
    the refusal names the others and any key no setting has (a typo there was silently ignored),
    for the server to show once (the server must start either way)."""
    if not isinstance(raw, dict):
        return Settings(), BadInput(
            f"initializationOptions must be an object of Lamina settings, got {type(raw).__name__}; the defaults apply",
            "send them as an object (docs/lsp.md lists the keys, their types and ranges)",
        )
    settings, bad = _each_valid(raw)
    unknown = _unknown(raw)
    problems = [f"invalid Lamina settings, ignored: {', '.join(sorted(bad))}"] if bad else []
    problems += [f"unknown Lamina settings, ignored: {', '.join(unknown)}"] if unknown else []
    if not problems:
        return settings, None
    return settings, BadInput(
        "; ".join(problems) + "; the others apply",
        "fix those lamina.* settings of the editor (docs/lsp.md lists their names, types and ranges)",
    )


LIVE_KEYS = {"budget": "budget", "mode": "mode", "topK": "top_k", "rankedLenses": "ranked_lenses"}


def live_update(current: Settings, raw: Any) -> tuple[Settings, BadInput | None]:
    """Apply the live-changeable keys of a `{"lamina": {...}}` configuration change: the valid ones,
    as `initializationOptions` does, naming the others (one bad value refused the whole change and
    only the first was named). Other keys are the client's own (VS Code sends its whole section)."""
    section = raw.get("lamina") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        return current, None
    picked = {k: v for k, v in section.items() if k in LIVE_KEYS and v is not None}
    if not picked:
        return current, None
    settings, bad = _each_valid(picked, current)
    if not bad:
        return settings, None
    return settings, BadInput(
        f"invalid Lamina settings, ignored: {', '.join(sorted(bad))}; the others apply",
        "fix those lamina.* settings of the editor (docs/lsp.md lists their types and ranges)",
    )
