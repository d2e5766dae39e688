"""No request waits for indexing: hover during a full build and a rebuild, shutdown mid-rebuild.

A generated workspace big enough that a build takes seconds on two cores; the
model is left out (lexical only) so the build is all chunking and SQLite.
Latency figures live in bench/lsp_latency.py; here the bound is generous (1 s)
and only says "never blocked behind the build".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git, run_cli, write
from tests.lsp_session import Session, server_env, wait_for

N_FILES = 600


def _module(i: int) -> str:
    funcs = "\n\n".join(
        f"def handler_{i}_{k}(request, payload):\n"
        f'    """Handle request kind {k} of module {i}."""\n'
        + "".join(f"    value_{j} = payload.get('field_{j}', {j}) * {k}\n" for j in range(12))
        + "    return request, payload\n"
        for k in range(10)
    )
    return f'"""Generated module {i}."""\n\n\nclass Service{i}:\n    def run(self):\n        return {i}\n\n\n{funcs}\n'


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("lsp-big")
    ws = base / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    for i in range(N_FILES):
        write(ws, f"pkg/sub{i % 20}/mod_{i}.py", _module(i))
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "generated")
    env = server_env(base / "cache", LAMINA_MODEL_DIR=str(base / "no-model"))
    return {"ws": ws, "index": base / "index", "env": env}


def _hover_latencies(s: Session, path: Path, until: Any, at_least: int = 5) -> list[float]:
    out: list[float] = []
    while len(out) < at_least or not until():
        t0 = time.monotonic()
        s.hover(path, 3, 10)
        out.append(time.monotonic() - t0)
        time.sleep(0.05)
        if len(out) > 400:
            break
    return out


def test_hover_answers_during_a_build_and_a_rebuild_and_shutdown_is_prompt(big: dict[str, Any]) -> None:
    ws = big["ws"]
    s = Session(ws, big["index"], big["env"], work_done_progress=True)
    path = ws / "pkg/sub1/mod_1.py"
    try:
        building = _hover_latencies(s, path, lambda: any(st["generation"] for st in s.states))
        assert max(building) < 1.0, building
        s.wait_generation(120)
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 60, f"the first build to settle {s.states[-3:]}")
        assert s.hover(path, 3, 10) is not None  # class Service1's `run`
        fut = s.request_later("lamina/contextRebuild")
        wait_for(lambda: s.states[-1]["freshness"] == "syncing", 10, "the rebuild to start")
        rebuilding = _hover_latencies(s, path, lambda: s.states[-1]["freshness"] != "syncing", at_least=10)
        assert max(rebuilding) < 1.0, rebuilding
        assert any(st["freshness"] == "syncing" for st in s.states)
        report = fut.result(120)
        assert report is not None
        # shutdown in the middle of another rebuild: answered and exited within a second
        s.request_later("lamina/contextRebuild")
        wait_for(lambda: s.states[-1]["freshness"] == "syncing", 10, "the second rebuild to start")
        time.sleep(0.5)
        pid = s.pid
        t0 = time.monotonic()
        code = s.close(timeout=5)
        elapsed = time.monotonic() - t0
        assert code == 0 and elapsed < 1.5, elapsed
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    finally:
        if s.thread.is_alive():
            s.close()
    # the killed rebuild left the previous generation answering, and the lock is free
    out = run_cli(
        "search",
        "handler_7_3",
        "--workspace",
        str(ws),
        "--index-dir",
        str(big["index"]),
        "--legs",
        "lexical",
        "--json",
        env={"LAMINA_CACHE_DIR": big["env"]["LAMINA_CACHE_DIR"], "LAMINA_MODEL_DIR": big["env"]["LAMINA_MODEL_DIR"]},
    )
    assert out.returncode == 0, out.stderr
    assert '"handler_7_3"' in out.stdout


def test_cancelling_the_build_progress_stops_it_and_the_previous_generation_answers(big: dict[str, Any]) -> None:
    from lsprotocol import types

    s = Session(big["ws"], big["index"], big["env"], work_done_progress=True)
    try:
        s.wait_generation(120)
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 60, "the index to settle")
        gen = s.states[-1]["generation"]
        n = len(s.progress)
        fut = s.request_later("lamina/contextRebuild")
        begin = wait_for(
            lambda: next((p for p in s.progress[n:] if p["kind"] == "begin"), None), 10, "the rebuild's progress"
        )
        assert begin["cancellable"] is True
        s.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=begin["token"]))
        err = None
        try:
            fut.result(30)
        except Exception as exc:  # the rebuild request fails with the cancel's code
            err = exc
        assert err is not None and getattr(err, "data", {}).get("code") == "LAMINA_BUILD_CANCELLED"
        wait_for(
            lambda: any(p["kind"] == "end" and p["token"] == begin["token"] for p in s.progress),
            5,
            "the progress to end",
        )
        st = wait_for(lambda: s.states[-1] if s.states[-1]["freshness"] == "fresh" else None, 10, "idle")
        assert st["generation"] == gen and "LAMINA_BUILD_CANCELLED" in st["last_error"]
        assert s.search("handler_3_2", legs="lexical")["hits"][0]["symbol"] == "handler_3_2"
    finally:
        assert s.close() == 0
