"""The LSP latency benchmark's own bookkeeping: where it hovers, how it counts, how it compares."""

from __future__ import annotations

from pathlib import Path

from pygls.protocol import JsonRPCResponseMessage, default_converter

from bench.lsp_latency import Sample, Target, comparison, plain_results, shop_target, summarize
from tests.conftest import ROOT, write


def test_hover_positions_point_at_the_defined_names(tmp_path: Path) -> None:
    a = write(tmp_path, "a.py", "import os\n\nclass Cart:\n    async def add(self):\n        pass\n")
    b = write(tmp_path, "b.py", "def total(x):\n    return x\n")
    t = Target(tmp_path, [a, b])
    lines = {p: p.read_text().splitlines() for p in (a, b)}
    got = []
    for uri, line0, char0, sym in t.hovers:
        path = a if uri == a.as_uri() else b
        assert lines[path][line0][char0 : char0 + len(sym)] == sym
        got.append(sym)
    assert got == ["Cart", "total", "add"]  # files interleaved, so a short phase hovers in each


def test_shop_target_opens_files_the_graph_declares() -> None:
    t = shop_target(ROOT / "examples" / "shop")
    assert t.files and all(f.suffix == ".py" and f.is_file() for f in t.files)
    text = "".join(p.read_text() for p in (ROOT / "examples/shop/.lamina/workflows").glob("*.yaml"))
    assert all(f.relative_to(ROOT / "examples" / "shop").as_posix() + "::" in text for f in t.files)


def _sample(phase: str, kind: str, ms: float, outcome: str) -> Sample:
    s = Sample(phase, kind, 0.0)
    s.ms, s.outcome = ms, outcome
    return s


def test_a_timeout_is_a_failure_and_counts_with_the_time_it_waited() -> None:
    samples = [_sample("build", "hover", 5.0, "ok") for _ in range(18)]
    samples += [_sample("build", "hover", 60000.0, "timeout"), _sample("build", "hover", 4.0, "empty")]
    m = summarize(samples, "build", "hover")
    assert (m["n"], m["failures"], m["timeouts"], m["empty"]) == (20, 1, 1, 1)
    assert m["max_ms"] == 60000.0 and m["p50_ms"] == 5.0
    assert m["target_p95_ms"] == 50.0 and m["met"] is False  # p95 5 ms, but a request never came back
    ok = summarize([_sample("rebuild", "search", 200.0, "ok")], "rebuild", "search")
    assert ok["met"] is True
    assert "met" not in summarize(samples, "idle", "hover")  # the issue sets targets while building only


def test_comparison_puts_labels_side_by_side_with_the_ratio() -> None:
    def run(p95: float, shutdown: float) -> dict:
        phases = {
            ph: {k: {"p95_ms": p95} for k in ("hover", "codeLens", "search", "unknown")}
            for ph in ("build", "idle", "rebuild")
        }
        return {"corpora": {"shop": {"phases": phases, "shutdown": {"total_s": shutdown}}}}

    assert comparison({"before": run(100.0, 10.0)}) is None
    text = comparison({"after": run(10.0, 0.5), "before": run(100.0, 10.0)})
    assert text is not None
    header = text.splitlines()[1].split()
    assert header[-3:] == ["before", "after", "after/before"]
    assert "0.100" in text and "0.050" in text


def test_the_bench_client_keeps_a_custom_answer_as_parsed() -> None:
    """pygls' default makes each dict of a custom method's answer a namedtuple (~170 ms for one
    search answer of topK 200): an editor's client does not pay that, so the bench must not."""
    raw = {"jsonrpc": "2.0", "id": 7, "result": {"hits": [{"file": "a.py", "reasons": ["lexical #1"]}]}}
    got = plain_results().structure(dict(raw), JsonRPCResponseMessage)
    assert got.id == 7 and got.result == raw["result"]
    assert default_converter().structure(dict(raw), JsonRPCResponseMessage).result != raw["result"]
