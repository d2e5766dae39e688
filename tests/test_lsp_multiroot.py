"""Multi-root: one index per workspace folder, requests routed to the folder holding the document.

Nested folders: the innermost answers for its files once indexed; until then the enclosing one.

Also `python -m lsp_server` as the entry point. No model needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from index.config import worktree_id
from index.lock import WriterLock
from lsp_server.params import plain
from tests.conftest import git, write
from tests.lsp_session import Session, server_env, wait_for

WORKFLOW = """workflows:
  - id: {wf}
    title: {title}
    summary: {title}.
    operations:
      - id: main
        title: {title}
        implemented_by: [{path}::{symbol}]
"""


def _repo(root: Path, path: str, symbol: str, wf: str) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    write(root, path, f'def {symbol}(x):\n    """{wf} entry point."""\n    return x\n')
    write(
        root,
        f".lamina/workflows/{wf}.yaml",
        WORKFLOW.format(wf=wf, title=wf.replace("-", " ").title(), path=path, symbol=symbol),
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def test_two_folders_each_indexed_and_routed_then_one_added_and_removed(tmp_path: Path) -> None:
    a = _repo(tmp_path / "alpha", "src/billing.py", "issue_invoice_alpha", "invoicing")
    b = _repo(tmp_path / "beta", "lib/shipping.py", "book_courier_beta", "shipping")
    c = _repo(tmp_path / "gamma", "app/catalog.py", "list_titles_gamma", "catalog")
    s = Session(
        [a, b],
        tmp_path / "index",
        server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm")),
        work_done_progress=False,
        module=True,
    )
    try:
        s.wait_generation(30, a)
        s.wait_generation(30, b)
        # requests routed by document
        assert [t for _, t, _ in s.lenses(a / "src/billing.py")] == ["implements invoicing/main"]
        assert [t for _, t, _ in s.lenses(b / "lib/shipping.py")] == ["implements shipping/main"]
        # commands take a folder; each folder has its own index
        hits_b = s.search("book_courier_beta", legs="lexical", folder=b.as_uri())["hits"]
        assert (
            hits_b and hits_b[0]["file"] == "lib/shipping.py" and hits_b[0]["uri"] == (b / "lib/shipping.py").as_uri()
        )
        assert not s.search("book_courier_beta", legs="lexical", folder=a.as_uri())["hits"]
        assert s.request("lamina/listWorkflows", {"folder": b.as_uri()})["workflows"][0]["workflow"] == "shipping"
        st_a = s.request("lamina/contextStatus", {"folder": a.as_uri()})
        st_b = s.request("lamina/contextStatus", {"folder": b.as_uri()})
        assert st_a["index_dir"] != st_b["index_dir"]
        # a third folder arrives, the first leaves
        s.notify(
            types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=c.as_uri(), name="gamma")],
                    removed=[types.WorkspaceFolder(uri=a.as_uri(), name="alpha")],
                )
            ),
        )
        s.wait_generation(30, c)
        hits_c = s.search("list_titles_gamma", legs="lexical", folder=c.as_uri())["hits"]
        assert hits_c and hits_c[0]["file"] == "app/catalog.py"
        assert [t for _, t, _ in s.lenses(c / "app/catalog.py")] == ["implements catalog/main"]
        wait_for(
            lambda: s.error("lamina/contextStatus", {"folder": a.as_uri()}).get("code") == "LAMINA_BAD_INPUT",
            5,
            "the removed folder to be gone",
        )
        assert s.lenses(a / "src/billing.py") == []
    finally:
        assert s.close() == 0


def test_a_folder_that_is_not_open_is_bad_input(tmp_path: Path) -> None:
    a = _repo(tmp_path / "alpha", "src/billing.py", "issue_invoice_alpha", "invoicing")
    s = Session(
        a,
        tmp_path / "index",
        server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm")),
        work_done_progress=False,
    )
    try:
        s.wait_generation(30)
        for bad in ("file:///definitely/not/open", "relative/path", str(tmp_path)):
            err = s.error("lamina/search", {"query": "invoice", "folder": bad})
            assert err["code"] == "LAMINA_BAD_INPUT" and err["remedy"], bad
        assert s.search("issue_invoice_alpha", legs="lexical", folder=str(a))["hits"]  # a plain path works too
    finally:
        assert s.close() == 0


def _nested(root: Path, *, inner_graph: bool) -> tuple[Path, Path]:
    """`root` and its subfolder `sub`, one repository: root's graph declares `sub/pkg/deep.py`;
    with `inner_graph`, sub's own graph declares the same symbol under another workflow and
    `pkg/own.py` too (both folders open: VS Code allows a folder inside another)."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    write(root, "top.py", "def top_level(x):\n    return x\n")
    write(root, "sub/pkg/deep.py", 'def deep_helper(x):\n    """Deep."""\n    return x\n')
    write(root, "sub/pkg/plain.py", 'def plain_helper(x):\n    """Nobody declares it."""\n    return x\n')
    write(
        root,
        ".lamina/workflows/outer.yaml",
        WORKFLOW.format(wf="outer", title="Outer", path="sub/pkg/deep.py", symbol="deep_helper"),
    )
    if inner_graph:
        write(root, "sub/pkg/own.py", 'def own_helper(x):\n    """Own."""\n    return x\n')
        write(
            root,
            "sub/.lamina/workflows/inner.yaml",
            WORKFLOW.format(wf="inner", title="Inner", path="pkg/deep.py", symbol="deep_helper")
            + "      - id: own\n        title: Own\n        implemented_by: [pkg/own.py::own_helper]\n",
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root, root / "sub"


def _relevant(s: Session, path: Path, line0: int, **kw: Any) -> dict[str, Any]:
    return s.request(
        "lamina/goToRelevantWorkflow", {"uri": path.as_uri(), "position": {"line": line0, "character": 4}, **kw}
    )


def test_go_to_relevant_workflow_answers_from_the_folder_it_names(tmp_path: Path) -> None:
    ws, sub = _nested(tmp_path / "ws", inner_graph=True)
    other = _repo(tmp_path / "other", "src/billing.py", "issue_invoice_other", "invoicing")
    s = Session(
        [ws, sub, other],
        tmp_path / "index",
        server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm")),
        work_done_progress=False,
    )
    deep = sub / "pkg/deep.py"
    try:
        for f in (ws, sub, other):
            s.wait_generation(30, f)
        # no folder: the document's own (innermost) folder answers, with its graph
        got = _relevant(s, deep, 1)
        assert [w["workflow"] for w in got["workflows"]] == ["inner"] and got["folder"] == sub.as_uri()
        # an explicit folder answers, as in every other request: the enclosing folder's graph
        got = _relevant(s, deep, 1, folder=ws.as_uri())
        assert [w["workflow"] for w in got["workflows"]] == ["outer"] and got["folder"] == ws.as_uri()
        assert got["workflows"][0]["uri"] == (ws / ".lamina/workflows/outer.yaml").as_uri()
        assert got["workflows"][0]["why"] == ["declares it: operation main implemented_by sub/pkg/deep.py::deep_helper"]
        assert _relevant(s, deep, 1, folder=str(ws))["folder"] == ws.as_uri()  # a plain path too
        # the same through workspace/executeCommand
        arg = {"uri": deep.as_uri(), "position": {"line": 1, "character": 4}, "folder": ws.as_uri()}
        cmd = plain(
            s.run(
                lambda: s.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command="lamina.goToRelevantWorkflow", arguments=[arg])
                )
            )
        )
        assert [w["workflow"] for w in cmd["workflows"]] == ["outer"]
        # a folder that is not open is refused as search/prepareTask refuse it; so is one without the file
        for bad in ("file:///definitely/not/open", str(tmp_path)):
            err = s.error("lamina/goToRelevantWorkflow", {"uri": deep.as_uri(), "position": {"line": 1}, "folder": bad})
            assert err["code"] == "LAMINA_BAD_INPUT" and err["remedy"], bad
        err = s.error(
            "lamina/goToRelevantWorkflow", {"uri": deep.as_uri(), "position": {"line": 1}, "folder": other.as_uri()}
        )
        assert err["code"] == "LAMINA_BAD_INPUT" and other.as_uri() in err["message"] and err["remedy"]
    finally:
        assert s.close() == 0


def _sub_held(tmp_path: Path, ws: Path, sub: Path) -> tuple[WriterLock, Session]:
    """A server on `ws` and `sub` while another process holds `sub`'s writer lock: `sub` stays
    without an index, deterministically, until the lock is released."""
    index = tmp_path / "index"
    lock = WriterLock(index / worktree_id(sub))
    lock.acquire()
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm"))
    return lock, Session([ws, sub], index, env, work_done_progress=False)


def test_a_nested_folder_without_an_index_lends_its_files_to_the_enclosing_folder(tmp_path: Path) -> None:
    """While `sub` has no index (here: another process holds its writer lock, so it stays without
    one until that process leaves, deterministically), its files get the hovers and lenses of
    `ws`, whose index has them, instead of nothing; once `sub` is indexed it answers itself."""
    ws, sub = _nested(tmp_path / "ws", inner_graph=False)
    lock, s = _sub_held(tmp_path, ws, sub)
    deep, plain_file = sub / "pkg/deep.py", sub / "pkg/plain.py"
    try:
        s.wait_generation(30, ws)
        assert s.request("lamina/contextStatus", {"folder": sub.as_uri()})["indexState"]["generation"] is None
        # a hover on a symbol's definition line: the enclosing folder's index, and it says so
        text = s.hover(plain_file, 0)
        assert text is not None and "`plain_helper` · function" in text, text
        assert "from the enclosing folder `ws`: `sub` has no index yet" in text
        # a link the enclosing folder's graph declares: its hover and its lens
        text = s.hover(deep, 1)
        assert text is not None and "**implements** `outer/main`" in text, text
        assert s.lenses(deep) == [
            (0, "implements outer/main", [{"workflow": "outer", "operation": "main", "folder": ws.as_uri()}])
        ]
        assert [w["workflow"] for w in _relevant(s, deep, 1)["workflows"]] == ["outer"]
        # the other process leaves: sub is taken over, indexed, and answers itself
        lock.release()
        s.wait_generation(60, sub)
        text = wait_for(lambda: s.hover(plain_file, 0), 10, "sub's own hover")
        assert "`plain_helper` · function" in text and "enclosing" not in text, text
        assert s.lenses(deep) == []  # sub's own graph declares nothing
    finally:
        lock.release()
        assert s.close() == 0


def test_a_nested_folder_still_indexing_keeps_what_its_own_graph_says(tmp_path: Path) -> None:
    """A nested folder's graph needs no index: while it has none, what it declares stays its
    answer (the enclosing folder lends only what the nested one cannot say)."""
    ws, sub = _nested(tmp_path / "ws", inner_graph=True)
    lock, s = _sub_held(tmp_path, ws, sub)
    try:
        s.wait_generation(30, ws)
        text = s.hover(sub / "pkg/own.py", 0)
        assert text is not None and "**implements** `inner/own`" in text and "enclosing" not in text, text
        assert [t for _, t, _ in s.lenses(sub / "pkg/deep.py")] == ["implements inner/main"]
        yaml_lenses = s.lenses(sub / ".lamina/workflows/inner.yaml")
        assert [t for _, t, _ in yaml_lenses] == ["workflow inner: 2 operations, 2 declared spans"]
        text = s.hover(sub / "pkg/plain.py", 0)  # nothing of its own: lent
        assert text is not None and "from the enclosing folder `ws`" in text, text
    finally:
        lock.release()
        assert s.close() == 0
