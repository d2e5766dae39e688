"""The Lamina language server (pygls). Placeholder until the server lands."""
from __future__ import annotations


def serve(index_dir: str | None = None) -> None:
    raise SystemExit("LAMINA_NOT_IMPLEMENTED: the language server is being written")
