"""A request during the server's own first build is told so, with what to do.

The refusal came from the readers' engine, which sees a writer lock it does not hold: "another
process may be building the first one", and the fix `lamina context rebuild`, which this very
server's writer lock refuses (LAMINA_INDEX_LOCKED). A real `lamina serve`; a generated workspace
whose first build takes seconds on two cores, asked at once.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git, write
from tests.lsp_session import Session, server_env, wait_for


def _module(i: int) -> str:
    body = "".join(f"    value_{j} = payload.get('field_{j}', {j}) * {i}\n" for j in range(12))
    funcs = "\n\n".join(f"def handler_{i}_{k}(request, payload):\n{body}    return request\n" for k in range(8))
    return f'"""Generated module {i}."""\n\n\n{funcs}\n'


def test_a_search_during_the_first_build_says_this_server_is_building(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    for i in range(200):
        write(ws, f"pkg/sub{i % 10}/mod_{i}.py", _module(i))
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "generated")
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        err = s.error("lamina/search", {"query": "handler_7_3"})
        assert err["code"] == "LAMINA_NO_INDEX", err
        assert "this server is building the first index of ws" in err["message"], err
        assert "another process" not in err["message"] and "lamina context rebuild" not in err["remedy"], err
        assert "lamina/indexState" in err["remedy"], err
        s.wait_generation(60)
        hits = wait_for(lambda: s.search("handler_7_3", legs="lexical")["hits"], 10, "answers once built")
        assert hits[0]["symbol"] == "handler_7_3"
    finally:
        assert s.close() == 0
