"""Issue 13 #6: a 2 MB report answers within seconds, keeping its title, frames, errors and names."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from index.query_analysis import analyze_query
from index.query_bounds import MAX_QUERY_CHARS, bound_text
from tests.faults.common import cli_env, lamina, shop_copy

TITLE = "Refund of a partially shipped order fails with RefundError"
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/inkwell/payments/refunds.py", line 80, in refund_order\n'
    "    raise RefundError(reason)\n"
    "inkwell.errors.RefundError: the 30-day refund window has closed\n"
)


def huge_report(size: int = 2_000_000, seed: int = 1) -> str:
    """Title, then a megabyte of log noise, the traceback, then more noise."""
    rng = random.Random(seed)
    words = "order cart refund payment gateway shipping stock ledger customer book isbn coupon total".split()
    noise = [
        f"2024-01-{rng.randint(1, 28):02d} INFO worker-{rng.randint(1, 9)} "
        + " ".join(rng.choice(words) for _ in range(12))
        + f" id={rng.randint(1, 10**9)}"
        for _ in range(size // 100)
    ]
    half = len(noise) // 2
    return "\n".join(
        [TITLE, "", *noise[:half], TRACE, "the line above is how the report_quokka_ledger job fails", *noise[half:]]
    )[:size]


def test_bound_keeps_title_frames_errors_and_identifiers() -> None:
    text = huge_report()
    assert len(text) >= 1_990_000
    t0 = time.perf_counter()
    short, note = bound_text(text)
    assert time.perf_counter() - t0 < 3
    assert len(short) <= MAX_QUERY_CHARS and note is not None and "2,000,000 characters" in note
    assert short.startswith(TITLE)
    a = analyze_query(short)
    assert [f.function for f in a.frames] == ["refund_order"]
    assert any("refund window has closed" in m for m in a.error_messages)
    assert "report_quokka_ledger" in short
    assert bound_text("short query") == ("short query", None)
    # a 10 MB single line is bounded too
    line, note = bound_text("x" * 10_000_000)
    assert len(line) <= MAX_QUERY_CHARS and note


def test_a_2mb_report_answers_within_seconds(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    report = tmp_path / "report.txt"
    report.write_text(huge_report(), encoding="utf-8")
    env = cli_env(tmp_path / "cache")
    common = ("--workspace", str(ws), "--index-dir", str(tmp_path / "idx"))
    assert lamina("context", "rebuild", *common, env=env).returncode == 0
    t0 = time.perf_counter()
    p = lamina("search", "--query-file", str(report), "--legs", "lexical", "--json", *common, env=env)
    took = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    assert took < 20, took
    assert "note: the query has 2,000,000 characters" in p.stderr
    hits = json.loads(p.stdout)
    assert hits[0]["file"] == "backend/inkwell/payments/refunds.py"
    t0 = time.perf_counter()
    p = lamina(
        "work",
        "prepare",
        "--task-file",
        str(report),
        "--workflow",
        "refund-order",
        "--no-wait",
        "--format",
        "json",
        *common,
        env=env,
    )
    took = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    assert took < 30, took
    packet = json.loads(p.stdout)
    assert len(packet["task"]) <= MAX_QUERY_CHARS
    assert any(n.startswith("the task has 2,000,000 characters") for n in packet["notes"])
