"""Multi-root: one index per workspace folder, requests routed to the folder holding the document.

Also `python -m lsp_server` as the entry point. No model needed.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

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
