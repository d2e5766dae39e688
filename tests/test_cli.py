"""The `lamina` CLI contract, run as a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from index.engine import Engine
from tests.conftest import git, run_cli, write

SRC = '''class PaymentGateway:
    def capture(self, amount_cents):
        if amount_cents <= 0:
            raise ValueError("capture amount must be positive")
        return {"captured": amount_cents}


def refund_payment(payment_id, reason):
    """Refund a captured payment."""
    return {"refunded": payment_id, "reason": reason}
'''


def _ws(repo: Path) -> Path:
    write(repo, "billing/payments.py", SRC)
    return repo


def test_search_json_contract(repo: Path, tmp_path: Path) -> None:
    ws = _ws(repo)
    out = run_cli(
        "search",
        "refund payment",
        "--workspace",
        str(ws),
        "--index-dir",
        str(tmp_path / "i"),
        "--json",
        "--legs",
        "lexical",
    )
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)
    assert hits and hits[0]["file"] == "billing/payments.py" and hits[0]["symbol"] == "refund_payment"
    for key in ("id", "file", "symbol", "kind", "start_line", "end_line", "score", "reasons"):
        assert key in hits[0]
    assert isinstance(hits[0]["reasons"], list) and hits[0]["reasons"]
    assert hits[0]["language"] == "python"  # the fence and filter key a client reads
    # stable ids: same query twice -> same ids
    again = json.loads(
        run_cli(
            "search",
            "refund payment",
            "--workspace",
            str(ws),
            "--index-dir",
            str(tmp_path / "i"),
            "--json",
            "--legs",
            "lexical",
        ).stdout
    )
    assert [h["id"] for h in again] == [h["id"] for h in hits]


def test_search_query_file_and_text_output(repo: Path, tmp_path: Path) -> None:
    ws = _ws(repo)
    report = tmp_path / "bug.md"
    report.write_text("Capture fails\n\n```\nValueError: capture amount must be positive\n```\n" + "noise " * 2000)
    out = run_cli(
        "search",
        "--query-file",
        str(report),
        "--workspace",
        str(ws),
        "--index-dir",
        str(tmp_path / "i"),
        "--legs",
        "lexical",
    )
    assert out.returncode == 0, out.stderr
    assert "billing/payments.py" in out.stdout and "PaymentGateway.capture" in out.stdout


def test_status_and_rebuild(repo: Path, tmp_path: Path) -> None:
    ws = _ws(repo)
    idx = str(tmp_path / "i")
    st = json.loads(run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx, "--json").stdout)
    assert st["generation"] is None and st["freshness"]["state"] == "no_index"
    rb = run_cli("context", "rebuild", "--workspace", str(ws), "--index-dir", idx)
    assert rb.returncode == 0 and "generation" in rb.stdout, rb.stderr
    st = json.loads(run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx, "--json").stdout)
    assert st["generation"] is not None and st["freshness"]["state"] == "fresh"
    assert st["files"] == 2 and st["manifest"]["membership_count"] == 2
    text = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx).stdout
    assert ", uncommitted changes (digest " in text  # billing/payments.py is not committed
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "billing")
    run_cli("context", "rebuild", "--workspace", str(ws), "--index-dir", idx)
    text = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx).stdout
    source = next(line for line in text.splitlines() if line.startswith("source "))
    assert source.endswith(", clean") and "dirty" not in source, source  # was "dirty e3b0c44298fc"
    write(ws, "billing/new.py", "def settle():\n    pass\n")
    st = json.loads(run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx, "--json").stdout)
    assert st["freshness"]["state"] == "stale" and st["freshness"]["added"] == 1
    text = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx).stdout
    assert "freshness   stale" in text
    # a server's sync of a saved path skipped a file: status says so before any full scan
    (ws / "billing" / "dump.py").write_bytes(b"\x00" * 64)
    with Engine(ws, tmp_path / "i") as eng:
        eng.sync(["billing/dump.py"])
    text = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx).stdout
    assert "            since the full scan: binary 1 (billing/dump.py)" in text, text


def test_failures_exit_nonzero_with_code_and_remedy(repo: Path, tmp_path: Path) -> None:
    out = run_cli("search", "x", "--workspace", str(tmp_path / "nope"), "--index-dir", str(tmp_path / "i"))
    assert out.returncode != 0 and out.stderr.startswith("LAMINA_WORKSPACE_INVALID") and "fix:" in out.stderr
    out = run_cli("search", "--workspace", str(repo), "--index-dir", str(tmp_path / "i"))
    assert out.returncode != 0 and "LAMINA_BAD_INPUT" in out.stderr
    # a second writer: rebuild refused while this process holds the lock; search falls back to reading
    with Engine(repo, tmp_path / "i") as eng:
        eng.sync()
        out = run_cli("context", "rebuild", "--workspace", str(repo), "--index-dir", str(tmp_path / "i"))
        assert out.returncode != 0 and "LAMINA_INDEX_LOCKED" in out.stderr
        out = run_cli(
            "search",
            "demo",
            "--workspace",
            str(repo),
            "--index-dir",
            str(tmp_path / "i"),
            "--json",
            "--legs",
            "lexical",
        )
        assert out.returncode == 0 and "another process is writing" in out.stderr


def test_expand_returns_the_enclosing_block(repo: Path, tmp_path: Path) -> None:
    ws = _ws(repo)
    out = run_cli(
        "search",
        "capture amount must be positive",
        "--workspace",
        str(ws),
        "--index-dir",
        str(tmp_path / "i"),
        "--json",
        "--legs",
        "lexical",
        "--expand",
    )
    assert out.returncode == 0, out.stderr
    hit = next(h for h in json.loads(out.stdout) if h["symbol"] == "PaymentGateway.capture")
    assert hit["block_start_line"] == 1 and "class PaymentGateway" in hit["text"]
    assert "def capture" in hit["text"]


def test_expand_prints_a_block_its_hits_share_once(repo: Path, tmp_path: Path) -> None:
    """A class's methods share its block: a 700-line class was printed once per hit."""
    methods = "".join(f"\n    def settle_{i}(self):\n        return 'settle ledger {i}'\n" for i in range(4))
    write(repo, "billing/ledger.py", 'class Ledger:\n    """The ledger."""\n' + methods)
    args = ("search", "settle ledger", "--workspace", str(repo), "--index-dir", str(tmp_path / "i"))
    out = run_cli(*args, "--legs", "lexical", "--expand", "--top-k", "4")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("class Ledger:") == 1, out.stdout
    assert out.stdout.count("under #1 above") == 3, out.stdout


def test_every_advice_names_a_command_that_exists() -> None:
    """An error's or status line's `run: lamina ...` is what a user types next: it must parse."""
    import re
    import subprocess
    import sys

    from tests.conftest import ROOT

    advice = re.compile(r"run: lamina ((?:[a-z]+)(?: [a-z]+)?)")
    found: set[str] = set()
    for folder in ("index", "lsp_server"):
        for py in (ROOT / folder).rglob("*.py"):
            found.update(m.group(1) for m in advice.finditer(py.read_text(encoding="utf-8")))
    assert found, "no advice found: the pattern no longer matches how advice is written"
    for cmd in sorted(found):
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server.cli", *cmd.split(), "--help"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert proc.returncode == 0, (cmd, proc.stdout[-300:], proc.stderr[-300:])


def test_a_query_whose_words_the_index_lacks_says_so(repo: Path, tmp_path: Path) -> None:
    """A name that was renamed away found nothing, silently (the note that existed blamed stop
    words and punctuation, and was shown only with --explain)."""
    ws = _ws(repo)
    common = ("--workspace", str(ws), "--index-dir", str(tmp_path / "i"), "--legs", "lexical")
    out = run_cli("search", "frobnicate_widget", *common)
    assert out.returncode == 0 and out.stdout.strip() == "no results", out.stdout
    assert "note: none of the query's words occurs in the index (frobnicate, widget, frobnicatewidget" in out.stderr
    out = run_cli("search", "the of a", *common)
    assert "note: the query has no words the lexical index can match" in out.stderr


def test_explain_escapes_control_characters_from_the_query_and_file_names(repo: Path, tmp_path: Path) -> None:
    """--explain echoed a frame's path with its ESC sequence raw (it recoloured the terminal) and a
    file name's newline broke its line; the ranked results were escaped already."""
    ws = _ws(repo)
    query = 'Traceback (most recent call last):\n  File "/x/esc\x1b[31mred.py", line 3, in f\nValueError: bad\x07 value'
    out = run_cli(
        "search", query, "--explain", "--workspace", str(ws), "--index-dir", str(tmp_path / "i"), "--legs", "lexical"
    )
    assert out.returncode == 0, out.stderr[-300:]
    assert "frame: /x/esc\\x1b[31mred.py:3 in f" in out.stderr, out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr
