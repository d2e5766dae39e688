"""What counts as an edit of `.lamina/config.toml` for the server's poll: real files, real renames."""

from __future__ import annotations

import os
from pathlib import Path

from lsp_server.workspace_file_watch import WorkspaceFileWatch


def test_each_kind_of_edit_is_reported_once_and_a_new_folder_is_only_recorded(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    folders = [a]
    watch = WorkspaceFileWatch(lambda: list(folders), lambda f: None)
    watch.start()
    watch.stop()
    cfg = a / ".lamina" / "config.toml"
    assert watch.poll() == []
    cfg.parent.mkdir()
    cfg.write_text("[history]\nmax_commits = 5\n")
    assert watch.poll() == [a]  # created
    assert watch.poll() == []  # reported once
    st = cfg.stat()
    cfg.write_text("[history]\nmax_commits = 6\n")  # same size: the time tells
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert watch.poll() == [a]
    tmp = cfg.with_suffix(".tmp")
    tmp.write_text("[history]\nmax_commits = 7\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # an editor's save: write beside, rename over
    tmp.replace(cfg)
    assert watch.poll() == [a]  # another file (inode) at the same time
    cfg.unlink()
    assert watch.poll() == [a]  # deleted
    folders.append(b)
    (b / ".lamina").mkdir()
    (b / ".lamina" / "config.toml").write_text("[history]\nmax_commits = 1\n")
    assert watch.poll() == []  # a folder opened now was opened with its file as it is
