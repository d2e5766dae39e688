"""A corpus of nasty files: 0 crashes, every skip counted by its reason, the rest searchable."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import git
from tests.faults.common import cli_env, held, lamina

ODD_NAMES = [
    "with space.py",
    "ünïcødé_名前.py",
    "-rf.py",
    "line\nbreak.py",
    "tab\tname.py",
    "quote'\"s.py",
    "star*.py",
    "back\\slash.py",
    ("x" * 250) + ".py",
    ".hidden.py",
    "semi;colon.py",
    "$(echo hi).py",
]


def build_corpus(root: Path) -> dict[str, int]:
    """Write the corpus; returns the skip reasons it must produce (reason -> at least this many)."""
    root.mkdir(parents=True)
    (root / "nul.py").write_bytes(b"def f():\n    return 1\n\x00\x00\x00 binary tail\n")
    (root / "one_line.js").write_bytes(b"var a = 1;" * 1_000_000)  # a 10 MB single line
    (root / "half_line.py").write_text("x = '" + "a" * 600_000 + "'\n")  # long but under 1 MiB
    (root / "latin1.py").write_bytes("# caf\xe9 cr\xe8me\n".encode("latin-1") * 200)  # not UTF-8 at all
    (root / "mixed.py").write_bytes(
        "def ok():\n    return 'ü'\n".encode() + b"# one bad byte \xff\n" + b"x = 1\n" * 200
    )
    (root / "crlf.py").write_bytes(b"def crlf_func():\r\n    return 1\r\n")
    (root / "cr_only.py").write_bytes(b"def cr_func():\r    return 2\r")
    (root / "bom.py").write_bytes(b"\xef\xbb\xbfdef bom_func():\n    return 3\n")
    (root / "utf16.py").write_bytes("def utf16_func():\n    return 4\n".encode("utf-16"))
    (root / "deep.py").write_text("".join(" " * i + f"def deep_{i}():\n" for i in range(300)) + " " * 300 + "pass\n")
    (root / "deep.js").write_text("function d() " + "{" * 2000 + "}" * 2000 + "\n")
    (root / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (root / "empty.py").write_bytes(b"")
    (root / "blank.py").write_text("\n\n   \n\t\n")
    (root / "id_rsa").write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink("/etc/hostname", root / "outside.py")
    os.symlink("does_not_exist.py", root / "broken.py")
    (root / "dir").mkdir()
    os.symlink("..", root / "dir" / "up")  # a directory loop
    os.mkfifo(root / "fifo.py")
    for name in ODD_NAMES:
        (root / name).write_text(f"def odd_{abs(hash(name)) % 1000}():\n    return {len(name)}\n")
    with open(os.path.join(os.fsencode(root), b"bad\xffname.py"), "wb") as fh:
        fh.write(b"x = 1\n")
    (root / "unreadable.py").write_text("x = 1\n")
    os.chmod(root / "unreadable.py", 0)
    git(root, "init", "-q")
    return {
        "binary": 2,
        "too_large": 1,
        "invalid_utf8": 2,
        "secret": 1,
        "symlink_loop": 2,
        "symlink_outside": 1,
        "symlink_broken": 1,
        "unreadable": 1,
    }


def test_nasty_corpus_no_crash_every_skip_counted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    want = build_corpus(ws)
    env = cli_env(tmp_path / "cache")
    common = ("--workspace", str(ws), "--index-dir", str(tmp_path / "idx"))
    rb = lamina("context", "rebuild", "--json", *common, env=env, timeout=300)
    assert rb.returncode == 0 and held(rb), rb.stderr
    report = json.loads(rb.stdout)
    for reason, n in want.items():
        assert report["skipped"].get(reason, 0) >= n, (reason, report["skipped"])
    st = lamina("context", "status", "--json", *common, env=env)
    assert st.returncode == 0, st.stderr
    status = json.loads(st.stdout)
    assert status["freshness"]["state"] == "fresh", status["freshness"]  # skipped files do not make it stale
    json.dumps(status)  # every example path is printable
    for query in ("crlf_func", "cr_func", "bom_func", "deep_150", "odd", "\u202e\x1b[31m", "x" * 5000):
        se = lamina("search", query, "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode in (0, 2) and held(se), (query, se.stderr)
    hits = json.loads(lamina("search", "crlf_func", "--legs", "lexical", "--json", *common, env=env).stdout)
    assert hits[0]["file"] == "crlf.py"
    hits = json.loads(lamina("search", "bom_func", "--legs", "lexical", "--json", *common, env=env).stdout)
    assert hits[0]["file"] == "bom.py"
