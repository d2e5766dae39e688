"""`lamina work verify`: a packet saved earlier, checked against the workspace today. Span ids name
spans of one index generation only, so a new process (a restarted agent) could not tell a span that
merely moved from one that changed or vanished; nothing checked a packet file at all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git, run_cli
from tests.faults.common import shop_copy

REFUNDS = "backend/inkwell/payments/refunds.py"
GATEWAY = "backend/inkwell/payments/gateway.py"


def _packet(ws: Path, tmp_path: Path) -> tuple[Path, dict]:
    got = run_cli(
        "work", "prepare", "refund a payment captured twice", "--workflow", "refund-order", "--json",
        "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"),
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    path = tmp_path / "packet.json"
    path.write_text(got.stdout)
    return path, json.loads(got.stdout)


def _verify(packet: Path, ws: Path) -> tuple[int, dict]:
    got = run_cli("work", "verify", str(packet), "--workspace", str(ws), "--json")
    assert got.returncode in (0, 1), got.stderr
    return got.returncode, json.loads(got.stdout)


def _by_symbol(check: dict, file: str, symbol: str) -> dict:
    return next(s for s in check["spans"] if s["file"] == file and s["symbol"] == symbol)


def test_a_saved_packet_says_which_spans_moved_changed_or_went(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    packet, p = _packet(ws, tmp_path)
    rc, check = _verify(packet, ws)
    assert rc == 0 and check["fresh"] and check["counts"]["fresh"] == len(p["spans"]) > 0
    assert [s["id"] for s in check["spans"]] == [s["id"] for s in p["spans"]]

    refunds = ws / REFUNDS
    text = refunds.read_text()
    assert "def is_eligible" in text and "def refund_order" in text
    # a line above both, and an edit inside one of them
    edited = "# audited\n" + text.replace("def is_eligible(self", "def is_eligible(  self", 1)
    refunds.write_text(edited)
    rc, check = _verify(packet, ws)
    assert rc == 1 and not check["fresh"]
    order = _by_symbol(check, REFUNDS, "RefundService.refund_order")
    assert order["state"] == "moved" and order["now_start_line"] == order["start_line"] + 1
    assert order["now_file"] == REFUNDS and order["now_id"] != order["id"]
    elig = _by_symbol(check, REFUNDS, "RefundPolicy.is_eligible")
    assert elig["state"] == "changed" and elig["now_start_line"] == elig["start_line"] + 1

    # a line above changed length only: same text at the same lines is fresh (bytes moved, lines did not)
    first, rest = text.split("\n", 1)
    refunds.write_text(first + "  # a longer first line\n" + rest)
    _, check = _verify(packet, ws)
    assert _by_symbol(check, REFUNDS, "RefundService.refund_order")["state"] == "fresh"

    # a function deleted: gone, with its name said
    refunds.write_text(text)
    start = text.index("    def is_eligible")
    end = text.index("\n\n", start)
    refunds.write_text(text[:start] + "    pass" + text[end:])
    _, check = _verify(packet, ws)
    gone = _by_symbol(check, REFUNDS, "RefundPolicy.is_eligible")
    assert gone["state"] == "gone" and "RefundPolicy.is_eligible" in gone["reason"]
    refunds.write_text(text)

    # a file renamed with git mv, then a plain mv: its spans are found in the new file
    git(ws, "mv", GATEWAY, "backend/inkwell/payments/gw.py")
    _, check = _verify(packet, ws)
    moved = [s for s in check["spans"] if s["file"] == GATEWAY]
    assert moved and all(s["state"] == "moved" and s["now_file"] == "backend/inkwell/payments/gw.py" for s in moved)
    (ws / "backend/inkwell/payments/gw.py").rename(ws / "backend/inkwell/payments/gateway2.py")
    _, check = _verify(packet, ws)
    assert all(s["now_file"] == "backend/inkwell/payments/gateway2.py" for s in check["spans"] if s["file"] == GATEWAY)

    # the text form lists what is not fresh and says what to do; exit 1
    human = run_cli("work", "verify", str(packet), "--workspace", str(ws))
    assert human.returncode == 1 and "moved" in human.stdout and "fix: " in human.stdout
    assert "now backend/inkwell/payments/gateway2.py:" in human.stdout


def test_a_packet_file_that_is_not_a_packet_is_refused_with_a_code(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    packet, p = _packet(ws, tmp_path)
    cases = {
        "not json": (packet.read_text()[: len(packet.read_text()) // 2], "is not JSON"),
        "other schema": (json.dumps({**p, "schema": "lamina.packet/5"}), "schema 'lamina.packet/5'"),
        "no spans": (json.dumps({"task": "x"}), "not a Lamina packet"),
        "bad span": (json.dumps({**p, "spans": [{"file": 3}]}), "not a valid lamina.packet/6"),
        "deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        "nul file": (json.dumps({**p, "spans": [{**p["spans"][0], "file": "a\u0000b.py"}]}), "no file system has"),
    }
    for name, (body, said) in cases.items():
        bad = tmp_path / f"{name}.json"
        bad.write_text(body)
        got = run_cli("work", "verify", str(bad), "--workspace", str(ws))
        assert got.returncode == 2 and got.stderr.startswith("LAMINA_BAD_INPUT"), (name, got.stderr)
        assert said in got.stderr and "Traceback" not in got.stderr, (name, got.stderr)
    missing = run_cli("work", "verify", str(tmp_path / "nope.json"), "--workspace", str(ws))
    assert missing.returncode == 2 and "cannot read packet file" in missing.stderr
    elsewhere = run_cli("work", "verify", str(packet), "--workspace", str(tmp_path / "gone"))
    assert elsewhere.returncode == 2 and elsewhere.stderr.startswith("LAMINA_WORKSPACE_INVALID"), elsewhere.stderr


def test_a_twin_body_is_not_the_span_and_a_committed_rename_is_followed(tmp_path: Path) -> None:
    """Review of the first cut: a deleted `Beta.close` read as "moved" onto `Alpha.close` (same body);
    a rename found only while uncommitted; a renamed and edited function was "gone"."""
    ws = shop_copy(tmp_path)
    twins = "class Alpha:\n    def close(self):\n        self.open = False\n        return None\n\n\n"
    twins += "class Beta:\n    def close(self):\n        self.open = False\n        return None\n"
    (ws / "backend" / "twins.py").write_text(twins)
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "twins")
    got = run_cli(
        "search",
        "Beta.close",
        "--json",
        "--workspace",
        str(ws),
        "--index-dir",
        str(tmp_path / "idx"),
        "--legs",
        "lexical",
    )
    beta = next(h for h in json.loads(got.stdout) if h["symbol"] == "Beta.close")
    packet, p = _packet(ws, tmp_path)
    p["spans"].append(
        {
            **{k: v for k, v in p["spans"][0].items()},
            **{k: beta[k] for k in ("id", "file", "symbol", "kind", "start_line", "end_line", "text_sha256")},
        }
    )
    packet.write_text(json.dumps(p))
    (ws / "backend" / "twins.py").write_text(twins[: twins.index("class Beta")])
    _, check = _verify(packet, ws)
    assert _by_symbol(check, "backend/twins.py", "Beta.close")["state"] == "gone"

    # a rename, committed, with an edit inside one function of the file
    git(ws, "mv", REFUNDS, "backend/inkwell/payments/refunding.py")
    moved = ws / "backend/inkwell/payments/refunding.py"
    moved.write_text(moved.read_text().replace("def is_eligible(self", "def is_eligible(  self", 1))
    git(ws, "commit", "-qam", "rename refunds")
    _, check = _verify(packet, ws)
    order = _by_symbol(check, REFUNDS, "RefundService.refund_order")
    assert order["state"] == "moved" and order["now_file"] == "backend/inkwell/payments/refunding.py", order
    elig = _by_symbol(check, REFUNDS, "RefundPolicy.is_eligible")
    assert elig["state"] == "changed" and elig["now_file"] == "backend/inkwell/payments/refunding.py", elig


def test_moves_the_second_review_found_and_packets_trimmed_or_broken(tmp_path: Path) -> None:
    """Second review: a move to a name that is not UTF-8 stopped the whole check (LAMINA_INTERNAL);
    `mv` plus an edit, and code moved out behind a shim at the old path, read "gone"; a packet
    commit unknown to the repository was not said; a packet trimmed to what the check reads was
    refused, and one whose spans lack their hash was checked as "changed"."""
    ws = shop_copy(tmp_path)
    packet, p = _packet(ws, tmp_path)
    payments = ws / "backend/inkwell/payments"
    # code moved out behind a shim, committed: the spans are in the new file
    git(ws, "mv", GATEWAY, "backend/inkwell/payments/gateway_impl.py")
    (payments / "gateway.py").write_text("from .gateway_impl import *  # noqa: F403\n")
    # refunds.py moved with plain mv and edited, not committed
    (payments / "refunds.py").rename(payments / "refunds_v2.py")
    text = (payments / "refunds_v2.py").read_text()
    (payments / "refunds_v2.py").write_text(text.replace("def is_eligible(self", "def is_eligible(  self", 1))
    git(ws, "add", "backend/inkwell/payments/gateway.py")
    git(ws, "commit", "-qm", "move the gateway out behind a shim")
    (ws / "backend").joinpath(b"caf\xe9.py".decode("utf-8", "surrogateescape")).write_bytes(b"X = 1\n")
    rc, check = _verify(packet, ws)
    assert rc == 1 and not check["notes"], check["notes"]
    gw = [s for s in check["spans"] if s["file"] == GATEWAY and s["symbol"]]
    assert gw and all(s["state"] == "moved" and s["now_file"].endswith("gateway_impl.py") for s in gw), gw
    elig = _by_symbol(check, REFUNDS, "RefundPolicy.is_eligible")
    assert elig["state"] == "changed" and elig["now_file"].endswith("refunds_v2.py"), elig
    assert _by_symbol(check, REFUNDS, "RefundService.refund_order")["state"] == "moved"

    # a commit the repository does not know: said, and new files are still searched
    p2 = {**p, "retrieval": {**p["retrieval"], "source_revision": "deadbeef" * 5}}
    other = tmp_path / "other.json"
    other.write_text(json.dumps(p2))
    _, check = _verify(other, ws)
    assert any("is not in this repository" in n for n in check["notes"]), check["notes"]

    # trimmed to what the check reads: accepted; a span without its hash, or spans null: refused
    slim = {
        "schema": p["schema"],
        "spans": [{k: s[k] for k in ("file", "start_line", "end_line", "text_sha256")} for s in p["spans"]],
    }
    other.write_text(json.dumps(slim))
    rc, check = _verify(other, ws)
    assert rc == 1 and len(check["spans"]) == len(p["spans"])
    for broken, said in (
        ({**slim, "spans": [{**slim["spans"][0], "text_sha256": ""}]}, "has no text_sha256"),
        ({**slim, "spans": None}, "no list of 'spans'"),
    ):
        other.write_text(json.dumps(broken))
        got = run_cli("work", "verify", str(other), "--workspace", str(ws))
        assert got.returncode == 2 and said in got.stderr, got.stderr


def test_line_ends_converted_by_a_checkout_change_no_span(tmp_path: Path) -> None:
    """git's autocrlf on another machine rewrites every line end: the packet's spans are the same
    text there (they all read "changed in place", exit 1)."""
    ws = shop_copy(tmp_path)
    packet, p = _packet(ws, tmp_path)
    refunds = ws / REFUNDS
    text = refunds.read_text()
    assert "\r" not in text
    refunds.write_bytes(text.replace("\n", "\r\n").encode())
    rc, check = _verify(packet, ws)
    mine = [s for s in check["spans"] if s["file"] == REFUNDS]
    assert rc == 0 and mine and all(s["state"] == "fresh" for s in mine), mine
    assert all("other line ends" in s["reason"] for s in mine)
    refunds.write_bytes(("# audited\n" + text).replace("\n", "\r\n").encode())
    _, check = _verify(packet, ws)
    order = _by_symbol(check, REFUNDS, "RefundService.refund_order")
    assert order["state"] == "moved" and order["now_start_line"] == order["start_line"] + 1
    # and back: a packet made on a CRLF checkout checked on an LF one
    packet2, _ = _packet(ws, tmp_path / "crlf")
    refunds.write_text("# audited\n" + text)
    rc, check = _verify(packet2, ws)
    assert rc == 0 and all("other line ends" in s["reason"] for s in check["spans"] if s["file"] == REFUNDS)


def test_one_line_spans_with_other_line_ends_are_fresh_too(tmp_path: Path) -> None:
    """Review: a CRLF checkout's one-line span ends in its CR, and spans without a newline were
    never compared with other line ends."""
    from index.chunking import chunk_file
    from index.config import Config
    from index.packet_verify import PacketIn, PacketSpanIn, verify_packet

    lf = "X = 1\n\ndef f(): return 1\n\nclass A:\n    def g(self):\n        return 2\n"
    for made, now in ((lf, lf.replace("\n", "\r\n")), (lf.replace("\n", "\r\n"), lf)):
        spans = [
            PacketSpanIn(file="m.py", symbol=c.symbol, kind=c.kind, start_line=c.start_line, end_line=c.end_line,
                         text_sha256=c.text_sha256)
            for c in chunk_file("m.py", made, Config())
        ]  # fmt: skip
        assert any(s.start_line == s.end_line for s in spans)
        (tmp_path / "m.py").write_bytes(now.encode())
        check = verify_packet(PacketIn(schema="lamina.packet/6", spans=spans), tmp_path)
        assert [c.state for c in check.spans] == ["fresh"] * len(spans), [(c.symbol, c.reason) for c in check.spans]
