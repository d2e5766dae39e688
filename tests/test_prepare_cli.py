"""`lamina work prepare` as a user runs it: a subprocess, real index, stdout/stderr, exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from index.packet import decode
from tests.conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "prepare" / "shop"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "no-model"
    empty.mkdir()
    return {"LAMINA_MODEL_DIR": str(empty), "LAMINA_INDEX_DIR": str(tmp_path / "idx")}


def test_fail_closed_exit_code_and_explicit_bypass(ws: Path, env: dict[str, str]) -> None:
    r = run_cli("work", "prepare", "customers are charged twice when paying", "--workspace", str(ws), env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("LAMINA_DENSE_UNAVAILABLE:") and "--workflow" in r.stderr
    ok = run_cli(
        "work",
        "prepare",
        "customers are charged twice when paying",
        "--workflow",
        "purchase",
        "--workspace",
        str(ws),
        "--format",
        "json",
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    p = decode(ok.stdout)
    assert p.selection.selected == ["checkout"] and p.retrieval.retrieval == "lexical_degraded"
    assert "retrieval is lexical_degraded" in ok.stderr
    assert p.spans[0].authority == "declared"


def test_graph_error_exits_with_file_and_line(ws: Path, env: dict[str, str]) -> None:
    wf = ws / ".lamina/workflows/workflows.yaml"
    wf.write_text(wf.read_text().replace("    summary: Pack a paid order", "    sumary: Pack a paid order"))
    r = run_cli("work", "prepare", "money back", "--workspace", str(ws), env=env)
    assert r.returncode == 2
    assert r.stderr.startswith("LAMINA_GRAPH_INVALID:")
    line = next(i for i, x in enumerate(wf.read_text().splitlines(), 1) if "sumary" in x)
    assert f".lamina/workflows/workflows.yaml:{line}:" in r.stderr and "did you mean 'summary'" in r.stderr


def test_markdown_task_file_exclude_and_json_flag(ws: Path, env: dict[str, str], tmp_path: Path) -> None:
    task = tmp_path / "task.txt"
    task.write_text("refund: the customer cannot get money back\n")
    md = run_cli("work", "prepare", "--task-file", str(task), "--workspace", str(ws), "--mode", "summary", env=env)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("# Packet (lamina.packet/6)")
    assert "`shop/refunds.py:11-15` `RefundService.approve` [declared]" in md.stdout
    js = run_cli("work", "prepare", "refund: money back", "--workspace", str(ws), "--json", env=env)
    p = decode(js.stdout)
    drop = p.spans[1].id
    ex = run_cli("work", "prepare", "refund: money back", "--workspace", str(ws), "--json", "--exclude", drop, env=env)
    q = decode(ex.stdout)
    assert drop not in [s.id for s in q.spans]
    assert any(o.reason == "excluded" and o.ids == [drop] for o in q.omitted)
    empty = run_cli("work", "prepare", "   ", "--workspace", str(ws), env=env)
    assert empty.returncode == 2 and empty.stderr.startswith("LAMINA_BAD_INPUT:")
