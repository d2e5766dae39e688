"""A sync that failed on a full disk runs again once space is freed, through a real `lamina serve`.

Only a changed file mid-build and a cancelled rebuild were retried: a save that hit a full index
disk left the folder `stale` until the next save, however long ago the user freed space. The
index folder here is a real tmpfs of a few hundred KiB (root only, as tests/faults/test_storage.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import ledger_repo, write
from tests.faults.common import fill_disk
from tests.faults.test_storage import needs_mount, tmpfs
from tests.lsp_session import Session, server_env, wait_for


def _hits(s: Session, word: str) -> list[str]:
    return [h["file"] for h in s.search(word, legs="lexical")["hits"]]


@needs_mount
def test_a_sync_that_failed_on_a_full_disk_runs_again_once_space_is_freed(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 1)
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    with tmpfs(tmp_path / "disk", "2m") as disk:
        s = Session(ws, disk / "index", env, work_done_progress=False)
        try:
            s.wait_generation(30)
            wait_for(lambda: s.states[-1]["freshness"] == "fresh", 30, "the first build to settle")
            fill_disk(disk)
            body = "".join(f"def reconcile_quarterly_{i}(invoice):\n    return invoice.total\n\n" for i in range(300))
            write(ws, "pkg/reconcile.py", body)  # the watcher queues it; its sync hits the full disk
            wait_for(
                lambda: "LAMINA_INDEX_DISK_FULL" in (s.states[-1].get("last_error") or ""),
                30,
                "the sync to fail on the full disk",
            )
            assert _hits(s, "reconcile_quarterly_7") == []
            (disk / "filler").unlink()  # space is back; no file changes from here on
            freed = time.monotonic()
            wait_for(lambda: "pkg/reconcile.py" in _hits(s, "reconcile_quarterly_7"), 30, "the retried sync")
            assert time.monotonic() - freed < 20
            wait_for(lambda: s.states[-1]["freshness"] == "fresh", 10, "the state to say fresh again")
            assert not s.states[-1].get("last_error")
        finally:
            s.close()
