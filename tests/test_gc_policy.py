"""lsp_server.gc_policy in a process of its own: freezing is process-wide, the test runner's is not ours."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import gc
    from lsp_server import gc_policy

    assert gc.get_freeze_count() == 0 and gc_policy.settled() == []
    assert gc_policy.settle("startup") is True
    frozen = gc.get_freeze_count()
    assert frozen > 1000, frozen
    assert gc_policy.settle("startup") is False  # once per stage: a second call freezes nothing new
    keep = [[i] for i in range(5000)]
    assert gc.get_freeze_count() == frozen
    assert gc_policy.settle("first-sync") is True
    assert gc.get_freeze_count() >= frozen + 5000  # what lived at the second stage is frozen too
    assert gc_policy.settled() == ["startup", "first-sync"]
    try:
        gc_policy.settle("every-build")
    except ValueError as exc:
        assert "every-build" in str(exc)
    else:
        raise AssertionError("an unknown stage must be refused")
    print("ok")
    """
)


def test_settle_freezes_once_per_stage_and_refuses_other_stages() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
