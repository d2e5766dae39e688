"""Another checkout's engine, importable next to this one, for same-index parity runs.

A refactor that must not change rankings is checked by querying the SAME index, after the
same sync and the same embeddings, with the code before and after. Two full benchmark walks
would each re-embed every repository (and a vector depends on its batch neighbours in the
last bits), so the walk is shared: this module copies the other checkout's `index/` package
to a temporary directory as `index_before` (every `index.` import rewritten), and opens a
read-only engine of that code on the index the current code just wrote.
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ALIAS = "index_before"
_IMPORT = re.compile(r"\b(from|import)\s+index(?=[.\s])")
_ROOT_IMPORT = re.compile(r"^(\s*)import index$", re.M)


def load_before(root: Path) -> Any:
    """The `Engine` class of the checkout at `root`, imported as `index_before.engine`."""
    src = root / "index"
    if not (src / "engine.py").is_file():
        raise FileNotFoundError(f"{src} has no engine.py: pass a checkout of this repository")
    tmp = Path(tempfile.mkdtemp(prefix="lamina-before-"))
    dest = tmp / ALIAS
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    # Paths found relative to the package (the model manifest in assets/) resolve as before.
    for sibling in ("assets",):
        if (root / sibling).exists():
            (tmp / sibling).symlink_to((root / sibling).resolve())
    for path in dest.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = _IMPORT.sub(lambda m: f"{m.group(1)} {ALIAS}", text)
        text = _ROOT_IMPORT.sub(lambda m: f"{m.group(1)}import {ALIAS}", text)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(tmp))
    try:
        module = importlib.import_module(f"{ALIAS}.engine")
    finally:
        sys.path.remove(str(tmp))
    return module.Engine


def open_reader(engine_cls: Any, workspace: Path, index_dir: Path) -> Any:
    """A read-only engine of the old code on the index the current code maintains."""
    return engine_cls(workspace, index_dir, writer=False)
