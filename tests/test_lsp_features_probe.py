"""What an editor user probing the server found: a real `lamina serve` over stdio, polled with deadlines.

* a failed sync leaves the index behind the files: the state says `stale`, not `fresh`;
* a FIFO named like a source file never holds a hover, a lens or a definition;
* `lamina/revealSpan` numbers a long symbol's later chunk as the lenses and the panel do;
* the state's `pending` counts spans without a vector, as search does, from the first generation on.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from tests.conftest import git, write
from tests.lsp_session import Session, copy_shop, lexical_session, server_env, wait_for

SKIP_MODEL = os.environ.get("LAMINA_SKIP_MODEL_TESTS") == "1"


def _module(i: int) -> str:
    return f'"""Module {i}."""\n\n\ndef func_{i}(x):\n    """The kestrel handler {i}."""\n    return x + {i}\n'


def _workspace(root: Path, n: int = 12) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for i in range(n):
        write(root, f"pkg/m{i}.py", _module(i))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def test_a_failed_sync_says_stale_until_a_sync_succeeds(tmp_path: Path) -> None:
    """The workspace deleted under the server: the sync fails and the index still holds every
    file. The state said `fresh` beside the error; a client showing "fresh" was wrong."""
    ws = _workspace(tmp_path / "ws")
    s = lexical_session(tmp_path, ws)
    try:
        shutil.rmtree(ws)
        st = wait_for(
            lambda: next(
                (
                    x
                    for x in reversed(s.states)
                    if "LAMINA_WORKSPACE_INVALID" in x["last_error"] and x["freshness"] != "syncing"
                ),
                None,
            ),
            10,
            "the failed sync's state",
        )
        assert st["freshness"] == "stale", st
        assert st["generation"] is not None  # the last generation still answers

        ws.mkdir()
        git(ws, "init", "-q")
        write(ws, "pkg/again.py", _module(99))
        done = wait_for(
            lambda: s.states[-1] if s.states[-1]["freshness"] == "fresh" else None,
            10,
            "a successful sync of the re-created folder",
        )
        assert done["last_error"] == "", done
    finally:
        assert s.close() == 0


def test_a_fifo_named_like_source_never_holds_a_request(tmp_path: Path) -> None:
    """Reading a FIFO blocks until something writes it: a hover, a lens or a definition on one held
    its pool thread forever (a few of them and no request was answered again)."""
    ws = _workspace(tmp_path / "ws")
    s = lexical_session(tmp_path, ws)
    fifo = ws / "pkg" / "pipe.py"
    os.mkfifo(fifo)
    try:
        assert s.run(lambda: s.client.text_document_hover_async(_hover_params(fifo)), 5) is None
        assert not s.run(lambda: s.client.text_document_code_lens_async(_lens_params(fifo)), 5)
        assert not s.run(lambda: s.client.text_document_definition_async(_definition_params(fifo)), 5)
        s.open(fifo, "def opened():\n    pass\n")  # an editor that opened it anyway: the buffer's text
        assert s.run(lambda: s.client.text_document_hover_async(_hover_params(fifo)), 5) is None
        assert not s.run(lambda: s.client.text_document_code_lens_async(_lens_params(fifo)), 5)
        hover = s.hover(ws / "pkg" / "m3.py", 3, 5)  # and the server still answers the rest
        assert hover is not None and "func_3" in hover
    finally:
        try:  # a server that still blocks in open() is released, so it can exit
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
        assert s.close() == 0


def _doc(path: Path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=path.as_uri())


def _hover_params(path: Path) -> types.HoverParams:
    return types.HoverParams(text_document=_doc(path), position=types.Position(line=0, character=4))


def _lens_params(path: Path) -> types.CodeLensParams:
    return types.CodeLensParams(text_document=_doc(path))


def _definition_params(path: Path) -> types.DefinitionParams:
    return types.DefinitionParams(text_document=_doc(path), position=types.Position(line=0, character=4))


def test_reveal_span_ranks_a_later_chunk_as_its_lens_does(tmp_path: Path) -> None:
    """RefundService.refund_order is two chunks: its lens, hover and panel entry say #2 for both,
    `lamina/revealSpan` said #3 for the second."""
    ws = copy_shop(tmp_path / "shop")
    s = lexical_session(tmp_path, ws)
    try:
        s.request("lamina/setTask", {"task": "refund an order partially", "workflow": "refund-order"})
        wait_for(lambda: any(p["state"] == "ready" for p in s.packets), 30, "the packet")
        spans = s.request("lamina/getPacket")["packet"]["spans"]
        chunks = [sp for sp in spans if sp["symbol"] == "RefundService.refund_order"]
        assert len(chunks) >= 2, [(sp["symbol"], sp["start_line"]) for sp in spans]
        lens_ranks = {
            title.split(" · ")[0]
            for _, title, _ in s.lenses(ws / chunks[0]["file"])
            if title.endswith("RefundService.refund_order")
        }
        assert len(lens_ranks) == 1, lens_ranks
        for sp in chunks:
            got = s.request("lamina/revealSpan", {"id": sp["id"]})
            assert f"Lamina #{got['rank']}" in lens_ranks, (got, lens_ranks)
    finally:
        assert s.close() == 0


@pytest.mark.model
@pytest.mark.skipif(SKIP_MODEL, reason="LAMINA_SKIP_MODEL_TESTS=1")
def test_the_state_counts_pending_spans_as_search_does(tmp_path: Path) -> None:
    """The state's `pending` is the spans without a vector (docs/lsp.md): it counted the embedder's
    texts (file summaries and long spans' windows too), more than the index has chunks, and a new
    generation was announced `hybrid`, 0 pending, until the embedder had counted."""
    ws = _workspace(tmp_path / "ws", n=40)
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"), work_done_progress=False)
    try:
        first = s.wait_generation(60)
        assert first["pending"] > 0 and first["retrieval"] == "hybrid_partial", first
        wait_for(
            lambda: s.states[-1]["pending"] == 0 and not s.states[-1]["embedding"], 120, "the embeddings to finish"
        )
        with_gen = [x for x in s.states if x["generation"] is not None]
        assert all(x["pending"] <= x["chunks"] for x in with_gen), [(x["pending"], x["chunks"]) for x in with_gen]
        assert s.search("kestrel handler")["pending_embeddings"] == 0
    finally:
        assert s.close() == 0
