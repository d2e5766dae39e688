"""What one CLI process loads: a lexical search and `context status` start without the dense stack.

Agents call the CLI in a loop, one process per query. onnxruntime, numpy and usearch took about
a third of a second to import before any work began, for commands that never embed anything;
pygls and lsprotocol belong to the language server; yaml is only needed when the graph changed.
The probe runs the real `main()` in a fresh interpreter and reports what `sys.modules` holds
afterwards: no timing, so the test means the same on a fast or a loaded machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_cli

PROBE = """
import json, sys
from lsp_server.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("\\n@@probe " + json.dumps({"code": code, "modules": list(sys.modules)}))
"""
# Top-level packages a lexical query or `context status` must not import.
HEAVY = ("onnxruntime", "numpy", "usearch", "tokenizers", "pygls", "lsprotocol", "yaml")
# Modules of a search that `context status` must not import.
QUERY_PATH = {"index.query_analysis", "index.lexical", "index.ranking", "index.retrieval.pipeline"}
SKIP_MODEL = os.environ.get("LAMINA_SKIP_MODEL_TESTS") == "1"


def probe(*args: str) -> tuple[int, list[str]]:
    """Exit code of `lamina ARGS` and the modules loaded by the time it returned, in import order."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=300)
    marker = out.stdout.rpartition("@@probe ")[2]
    assert marker, (out.returncode, out.stderr[-2000:])
    got = json.loads(marker)
    return got["code"], got["modules"]


def heavy(modules: list[str]) -> list[str]:
    return sorted({m for m in modules if m.split(".")[0] in HEAVY})


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """examples/shop as a committed git repository (its workflow graph included), indexed once."""
    base = tmp_path_factory.mktemp("startup")
    ws = base / "shop"
    shutil.copytree(ROOT / "examples" / "shop", ws)
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "shop")
    idx = base / "index"
    built = run_cli("context", "rebuild", "--workspace", str(ws), "--index-dir", str(idx))
    assert built.returncode == 0, built.stderr
    return ws, idx


@pytest.mark.parametrize(
    "argv",
    [("search", "--legs", "lexical", "refund a captured payment"), ("context", "status")],
    ids=["search-lexical", "context-status"],
)
def test_lexical_search_and_status_load_no_model_vectors_or_server(
    shop: tuple[Path, Path], argv: tuple[str, ...]
) -> None:
    ws, idx = shop
    code, modules = probe(*argv, "--workspace", str(ws), "--index-dir", str(idx))
    assert code == 0
    assert "index.engine" in modules and "sqlite3" in modules  # the probe sees what the command loaded
    assert heavy(modules) == []


def test_status_loads_no_query_path(shop: tuple[Path, Path]) -> None:
    """`context status` answers from stored state: the query analyser's regular expressions (~15 ms
    to compile at import), BM25 and ranking belong to a search, not to a status line."""
    ws, idx = shop
    code, modules = probe("context", "status", "--workspace", str(ws), "--index-dir", str(idx))
    assert code == 0
    assert "index.history" in modules  # the probe sees the history leg's state being read
    assert sorted(set(modules) & QUERY_PATH) == []


@pytest.mark.model
@pytest.mark.skipif(SKIP_MODEL, reason="LAMINA_SKIP_MODEL_TESTS=1")
def test_a_hybrid_search_loads_onnxruntime_before_usearch(shop: tuple[Path, Path]) -> None:
    """The other order segfaults inside onnxruntime's init (index/native.py): the dense leg keeps it."""
    ws, idx = shop
    code, modules = probe(
        "search", "refund a captured payment", "--no-wait", "--workspace", str(ws), "--index-dir", str(idx)
    )
    assert code == 0
    assert "usearch" in modules and "onnxruntime" in modules
    assert modules.index("onnxruntime") < modules.index("usearch")
