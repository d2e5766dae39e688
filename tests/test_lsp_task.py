"""The current task end to end: a real `lamina serve` on a copy of examples/shop, VS Code's capabilities.

One server for the module, the issue's sequence in order: rising progress ->
setTask -> packetChanged -> codeLens/refresh -> lenses on ranked spans -> hover
with rank and reasons -> an unsaved edit moves a lens -> a cited file edited
on disk re-prepares the packet -> relevant workflow, select, reveal, clear.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp_session import Session, copy_shop, server_env, wait_for

pytestmark = pytest.mark.model  # the packet's selection needs the dense leg (fails closed without it)

TASK = "Refund a payment that was captured twice"
REFUNDS = "backend/inkwell/payments/refunds.py"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("lsp-task")
    ws = copy_shop(base / "shop")
    s = Session(ws, base / "index", server_env(base / "cache"))
    s.wait_generation(60)
    yield s
    if s.thread.is_alive():
        s.close()


def _ready(s: Session, after: int) -> dict[str, Any]:
    return wait_for(
        lambda: next((p for p in s.packets[after:] if p["state"] in ("ready", "error")), None), 60, "a prepared packet"
    )


# A cold build embeds the shop's 1,416 texts (chunks and file summaries) on the server's one model
# thread: ~8 s on an idle 2-vCPU machine (session 28), but ~65 s was seen once (session 26), and a
# fixed 60 s failed there. The wait bounds a hang, it is not a speed claim (bench/ holds those).
COLD_BUILD_S = 180


def test_one_build_progress_rises_and_is_cancellable(shop: Session) -> None:
    wait_for(lambda: any(p["kind"] == "end" for p in shop.progress), COLD_BUILD_S, "the build's progress to end")
    token = shop.progress[0]["token"]
    mine = [p for p in shop.progress if p["token"] == token]
    assert mine[0]["kind"] == "begin" and mine[0]["cancellable"] is True
    assert mine[-1]["kind"] == "end"
    pcts = [p["percentage"] for p in mine if p.get("percentage") is not None]
    assert pcts == sorted(pcts), f"the percentage went back: {pcts}"
    assert len({p["token"] for p in shop.progress if p["kind"] == "begin"}) == len(
        [p for p in shop.progress if p["kind"] == "begin"]
    )  # one begin per token


def test_set_task_answers_at_once_then_announces_the_packet(shop: Session) -> None:
    wait_for(lambda: shop.states[-1]["retrieval"] == "hybrid", COLD_BUILD_S, "embeddings to catch up")
    before, refreshes = len(shop.packets), shop.lens_refreshes
    t0 = time.monotonic()
    got = shop.request("lamina/setTask", {"task": TASK})
    assert time.monotonic() - t0 < 1.0
    assert got["accepted"] is True and got["task"] == TASK
    ready = _ready(shop, before)
    assert ready["state"] == "ready", ready
    assert ready["outcome"] == "multi_workflow"
    assert set(ready["workflows"]) == {"refund-order", "payment-capture"}
    assert ready["spans"] > 0 and ready["packetId"]
    wait_for(lambda: shop.lens_refreshes > refreshes, 5, "workspace/codeLens/refresh")
    packet = shop.request("lamina/getPacket")
    assert packet["state"] == "ready" and packet["packetId"] == ready["packetId"]
    assert packet["packet"]["schema"] == "lamina.packet/6"
    md = shop.request("lamina/getPacket", {"format": "markdown"})
    assert "refund-order" in md["markdown"] and "packet" not in md


def _ranked_lens(shop: Session, path: Path) -> tuple[int, str, Any]:
    """The lens of the best-ranked span in `path`."""
    lenses = [lens for lens in shop.lenses(path) if lens[1].startswith("Lamina #")]
    assert lenses, shop.lenses(path)
    return min(lenses, key=lambda lens: int(lens[1].split("#")[1].split(" ")[0]))


def test_ranked_span_lenses_and_hover_with_rank_and_reasons(shop: Session) -> None:
    path = shop.workspace / REFUNDS
    packet = shop.request("lamina/getPacket")["packet"]
    spans = [(i, s) for i, s in enumerate(packet["spans"], 1) if s["file"] == REFUNDS]
    assert spans
    rank, span = spans[0]
    line0, title, args = _ranked_lens(shop, path)
    assert title.startswith(f"Lamina #{rank} · ") and title.endswith(span["symbol"])
    assert line0 == span["start_line"] - 1
    assert args == [{"id": span["id"], "folder": shop.workspace.resolve().as_uri()}]
    # a long declared method is two chunks in the packet (its whole body), one lens in the editor
    parts = [s for _, s in spans if s["symbol"] == "RefundService.refund_order"]
    assert len(parts) == 2 and parts[1]["score"] == parts[0]["score"] > 0
    assert parts[1]["reasons"][1].startswith("continues RefundService.refund_order from lines")
    lensed = [lens[1].rsplit(" · ", 1)[-1] for lens in shop.lenses(path) if lens[1].startswith("Lamina #")]
    assert lensed.count("RefundService.refund_order") == 1 and len(lensed) == len(set(lensed))
    assert parts[1]["continues"] == parts[0]["id"]
    # ranks count answers, as the panel lists them: every span after the two chunks is one rank up
    answer: dict[str, int] = {}
    for s in packet["spans"]:
        answer[s["id"]] = answer[s["continues"]] if s["continues"] in answer else len(set(answer.values())) + 1
    later = {s["file"] for s in packet["spans"][packet["spans"].index(parts[1]) + 1 :]}
    assert later
    for rel in later:
        for _, title, args in (x for x in shop.lenses(shop.workspace / rel) if x[1].startswith("Lamina #")):
            assert title.startswith(f"Lamina #{answer[args[0]['id']]} · "), (rel, title)
    text = shop.hover(path, line0 + 1)
    assert text is not None
    first = text.splitlines()[0]
    assert first.startswith(f"**Lamina #{rank}**") and "score" in first and span["authority"] in first
    # the legs line is its own line in the rendered Markdown, not run into the header's last word
    assert not text.splitlines()[1].startswith("legs:") or first.endswith("  ")
    assert span["reasons"][0] in text
    assert "generation" in text
    # a declared span this search did not rank (no legs, score 0) says so instead of "score 0.000"
    unranked = [s for s in packet["spans"] if s["authority"] == "declared" and not s["legs"] and s["score"] == 0]
    assert unranked, "the shop's refund task declares a web page no leg ranks"
    head = shop.hover(shop.workspace / unranked[0]["file"], unranked[0]["start_line"])
    assert head is not None
    assert "not ranked by this search" in head.splitlines()[0] and "score" not in head.splitlines()[0], head
    # a plain indexed symbol (no packet, no workflow) hovers on its definition line
    other = shop.hover(shop.workspace / "backend/inkwell/money.py", 0)
    assert other is None or "generation" in other


def test_an_unsaved_edit_above_a_span_moves_its_lens(shop: Session) -> None:
    path = shop.workspace / REFUNDS
    line0, title, _ = _ranked_lens(shop, path)
    text = path.read_text(encoding="utf-8")
    shop.open(path, text, version=1)
    shop.replace_buffer(path, "# a\n# b\n# c\n# d\n# e\n" + text, version=2)
    moved = wait_for(
        lambda: [x for x in shop.lenses(path) if x[1] == title and x[0] == line0 + 5],
        5,
        "the lens to follow the buffer",
    )
    assert moved
    hover = shop.hover(path, line0 + 5 + 1)
    assert hover is not None and hover.startswith("**Lamina #")
    wait_for(lambda: shop.states[-1]["freshness"] == "dirty", 5, "a dirty state")
    # the span's first line edited away: no lens at a wrong line
    lines = text.splitlines(keepends=True)
    del lines[line0]
    shop.replace_buffer(path, "".join(lines), version=3)
    wait_for(lambda: not [x for x in shop.lenses(path) if x[1] == title], 5, "the stale span's lens to go")
    rel = shop.request("lamina/revealSpan", {"id": _packet_span_id(shop, title)})
    assert rel["stale"] is True
    shop.close_document(path)
    wait_for(lambda: [x for x in shop.lenses(path) if x[1] == title and x[0] == line0], 5, "the lens back on disk")


def _packet_span_id(shop: Session, title: str) -> str:
    rank = int(title.split("#")[1].split(" ")[0])
    return shop.request("lamina/getPacket")["packet"]["spans"][rank - 1]["id"]


def test_reveal_span_and_relevant_workflow(shop: Session) -> None:
    path = shop.workspace / REFUNDS
    line0, title, args = _ranked_lens(shop, path)
    got = shop.request("lamina/revealSpan", args[0])
    assert got["uri"] == path.as_uri() and got["range"]["start"]["line"] == line0 and got["stale"] is False
    rel = shop.request(
        "lamina/goToRelevantWorkflow", {"uri": path.as_uri(), "position": {"line": line0 + 1, "character": 4}}
    )
    assert rel["workflows"], rel
    best = rel["workflows"][0]
    assert best["workflow"] == "refund-order"
    assert best["uri"].endswith("20-orders.yaml") and best["line"] > 0
    assert any("declares it" in w for w in best["why"])


def test_a_cited_file_changed_on_disk_re_prepares_the_packet(shop: Session) -> None:
    before = len(shop.packets)
    old = shop.request("lamina/getPacket")["packetId"]
    path = shop.workspace / REFUNDS
    path.write_text("# refunds: a comment line moves every span\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    ready = _ready(shop, before)
    assert ready["state"] == "ready" and ready["packetId"] != old


def test_a_cited_file_deleted_and_restored_comes_back_into_the_packet(shop: Session) -> None:
    """The packet followed the files it cited only: a deleted file was dropped, and its return (a
    `git checkout --`, an undo) never brought it back, though searches found it again."""

    def cited() -> set[str]:
        packet = shop.request("lamina/getPacket")["packet"] or {"spans": []}
        return {s["file"] for s in packet["spans"]}

    assert REFUNDS in cited()
    path = shop.workspace / REFUNDS
    text = path.read_text(encoding="utf-8")
    path.unlink()
    wait_for(lambda: REFUNDS not in cited(), 30, "the packet without the deleted file")
    path.write_text(text, encoding="utf-8")
    wait_for(lambda: REFUNDS in cited(), 30, "the restored file back in the packet")


def test_select_workflow_then_clear(shop: Session) -> None:
    before = len(shop.packets)
    got = shop.request("lamina/selectWorkflow", {"workflow": "ship-order"})
    assert got["workflow"] == "ship-order" and got["task"] == TASK
    ready = _ready(shop, before)
    assert ready["workflows"] == ["ship-order"] and ready["outcome"] == "selected"
    n = len(shop.packets)
    assert shop.request("lamina/clearTask")["cleared"] is True
    wait_for(lambda: any(p["state"] == "cleared" for p in shop.packets[n:]), 5, "a cleared packet")
    assert not [x for x in shop.lenses(shop.workspace / REFUNDS) if x[1].startswith("Lamina #")]
    assert shop.request("lamina/getPacket")["state"] == "none"


def test_every_command_answers_and_bad_arguments_are_lamina_bad_input(shop: Session) -> None:
    ws = shop.workspace
    assert shop.request("lamina/listWorkflows")["workflows"]
    assert shop.request("lamina/showWorkflow", {"workflow": "checkout"})["uri"].endswith("20-orders.yaml")
    assert shop.request("lamina/contextStatus")["generation"]
    assert shop.search("refund_order", topK=3)["hits"][0]["uri"].startswith("file://")
    assert shop.request("lamina/prepare", {"task": TASK, "mode": "summary"})["schema"] == "lamina.packet/6"
    bad = [
        ("lamina/prepare", {"task": TASK, "exclude": 5}),
        ("lamina/prepare", {}),
        ("lamina/setTask", {"task": "   "}),
        ("lamina/setTask", {"task": 7}),
        ("lamina/setTask", {"task": "refund\x00order"}),  # accepted, then failed in packetChanged
        ("lamina/search", {"query": "x", "topK": -1}),
        ("lamina/search", {"query": "x", "legs": "both"}),
        ("lamina/getPacket", {"format": "pdf"}),
        ("lamina/goToRelevantWorkflow", {"uri": (ws / REFUNDS).as_uri()}),
        ("lamina/revealSpan", {"id": "nope"}),
        ("lamina/contextStatus", {"folder": "file:///not/a/folder"}),
        ("lamina/selectWorkflow", {}),
    ]
    for method, params in bad:
        err = shop.error(method, params)
        assert err.get("code") == "LAMINA_BAD_INPUT", (method, params, err)
        assert err.get("remedy"), (method, err)
    assert shop.error("lamina/showWorkflow", {"workflow": "no-such"})["code"] == "LAMINA_WORKFLOW_NOT_FOUND"
    huge = shop.error("lamina/showWorkflow", {"workflow": "w" * 1_000_000})  # it is quoted, clipped
    assert huge["code"] == "LAMINA_WORKFLOW_NOT_FOUND" and len(huge["message"]) < 3000, len(huge["message"])
    assert shop.error("lamina/selectWorkflow", {"workflow": "no-such"})["code"] == "LAMINA_WORKFLOW_NOT_FOUND"
    # the same through workspace/executeCommand
    with pytest.raises(JsonRpcException) as exc:
        shop.run(
            lambda: shop.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lamina.prepare", arguments=[{"task": TASK, "exclude": 5}])
            )
        )
    assert exc.value.data["code"] == "LAMINA_BAD_INPUT"
    got = shop.run(
        lambda: shop.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="lamina.listWorkflows", arguments=[])
        )
    )
    assert got is not None


def test_shutdown_answers_fast_and_the_process_exits(shop: Session) -> None:
    t0 = time.monotonic()
    code = shop.close()
    assert code == 0
    assert time.monotonic() - t0 < 5
