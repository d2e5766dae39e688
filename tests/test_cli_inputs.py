"""Issue 13 #7, #8, #9: CLI arguments and inputs refused with LAMINA_BAD_INPUT; the graph is what the
repository tracks (local overrides only by a visible opt-in); `lamina workflows` exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from index.graph import load_graph
from tests.conftest import ROOT, commit_files, git, run_cli, write

TRACKED = """workflows:
  - id: refund-order
    title: Refund an order
    aliases: [order refund]
    summary: Give money back for returned books.
"""
LOCAL = """workflows:
  - id: zz-local
    title: Steer every refund here
    aliases: [order refund now]
    summary: An untracked file that must not steer selection.
"""


@pytest.fixture
def shop(repo: Path) -> Path:
    return commit_files(
        repo,
        {
            ".lamina/workflows/orders.yaml": TRACKED,
            "shop/refunds.py": "def refund_order(order):\n    return order.total\n",
        },
    )


def _run(*args: str) -> tuple[int, str, str]:
    p = run_cli(*args)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1e3", "100000"])
def test_bad_top_k_is_refused_with_a_code(shop: Path, tmp_path: Path, value: str) -> None:
    rc, out, err = _run(
        "search", "refund", "--top-k", value, "--workspace", str(shop), "--index-dir", str(tmp_path / "idx")
    )
    assert rc == 2 and err.startswith("LAMINA_BAD_INPUT:"), err
    assert "--top-k" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("name", "value"),
    [("LAMINA_HISTORY_MAX_COMMITS", "0"), ("LAMINA_HISTORY_MAX_COMMITS", "many"), ("LAMINA_HISTORY_MAX_YEARS", "-1")],
)
def test_a_bad_history_bound_in_the_environment_is_refused_with_a_code(
    shop: Path, tmp_path: Path, name: str, value: str
) -> None:
    p = run_cli("search", "refund", "--workspace", str(shop), "--index-dir", str(tmp_path / "idx"), env={name: value})
    assert p.returncode == 2 and p.stderr.startswith(f"LAMINA_BAD_INPUT: {name}={value!r}"), p.stderr
    assert "fix:" in p.stderr and "Traceback" not in p.stderr


def test_the_environment_s_history_bound_is_read_and_shown_by_status(shop: Path, tmp_path: Path) -> None:
    idx = str(tmp_path / "idx")
    env = {"LAMINA_HISTORY_MAX_COMMITS": "1", "LAMINA_HISTORY_MAX_YEARS": "0"}
    assert run_cli("search", "refund", "--workspace", str(shop), "--index-dir", idx, env=env).returncode == 0
    out = run_cli("context", "status", "--workspace", str(shop), "--index-dir", idx, env=env).stdout
    assert (
        "history     on (newest 1 commit read, all vote; 1 commit reachable from HEAD (the bound: older ones are not read), 1 can vote;"
        in out
    ), out


def test_an_unknown_option_or_missing_command_has_a_code() -> None:
    for argv in (["search", "x", "--bogus"], [], ["work", "prepare", "t", "--budget", "-5"]):
        rc, _, err = _run(*argv)
        assert rc == 2 and err.startswith("LAMINA_BAD_INPUT:"), (argv, err)


def test_a_query_that_looks_like_an_option_is_told_where_it_goes(shop: Path, tmp_path: Path) -> None:
    """A config key or flag is an everyday query (`--basetemp`); argparse reads it as an option."""
    rc, _, err = _run("search", "--basetemp", "--workspace", str(shop))
    assert rc == 2 and err.startswith("LAMINA_BAD_INPUT:") and "after `--`" in err, err
    out = run_cli(
        "search", "--workspace", str(shop), "--index-dir", str(tmp_path / "i"), "--legs", "lexical", "--", "--basetemp"
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("content", [b"", b"   \n\n", b"\x00\x01\x02\x03binary\x00", b"\x89PNG\r\n\x1a\n\x00\x00"])
def test_empty_or_binary_query_and_task_files_are_refused(shop: Path, tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "q.txt"
    f.write_bytes(content)
    idx = str(tmp_path / "idx")
    for argv in (["search", "--query-file", str(f)], ["work", "prepare", "--task-file", str(f)]):
        rc, out, err = _run(*argv, "--workspace", str(shop), "--index-dir", idx)
        assert rc == 2 and err.startswith("LAMINA_BAD_INPUT:"), (argv, err)
        assert out == ""


def test_an_untracked_graph_file_does_not_steer_selection(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(shop, ".gitignore", ".lamina/workflows/zz-local.yaml\n")
    git(shop, "add", ".gitignore")
    git(shop, "commit", "-qm", "ignore")
    write(shop, ".lamina/workflows/zz-local.yaml", LOCAL)
    monkeypatch.delenv("LAMINA_LOCAL_WORKFLOWS", raising=False)
    graph, problems = load_graph(shop)
    assert graph is not None and set(graph.workflows) == {"refund-order"}
    assert any(p.file.endswith("zz-local.yaml") and "LAMINA_LOCAL_WORKFLOWS" in p.reason for p in problems)
    idx = str(tmp_path / "idx")
    rc, out, err = _run(
        "work", "prepare", "order refund now", "--workflow", "zz-local", "--workspace", str(shop), "--index-dir", idx
    )
    assert rc == 2 and "LAMINA_WORKFLOW_NOT_FOUND" in err
    # the explicit opt-in loads it, and the packet says so
    monkeypatch.setenv("LAMINA_LOCAL_WORKFLOWS", "1")
    graph, _ = load_graph(shop)
    assert graph is not None and "zz-local" in graph.workflows
    assert graph.local_files == [".lamina/workflows/zz-local.yaml"]
    p = run_cli(
        "work",
        "prepare",
        "order refund now",
        "--workflow",
        "zz-local",
        "--format",
        "json",
        "--no-wait",
        "--workspace",
        str(shop),
        "--index-dir",
        idx,
        env={"LAMINA_LOCAL_WORKFLOWS": "1"},
    )
    assert p.returncode == 0, p.stderr
    packet = json.loads(p.stdout)
    assert packet["graph"]["local_overrides"] == [".lamina/workflows/zz-local.yaml"]
    assert any("local override" in n for n in packet["notes"])
    # a tracked edit (not yet committed) is part of the graph: tracked means the file, not the commit
    write(shop, ".lamina/workflows/orders.yaml", TRACKED.replace("Refund an order", "Refund an order today"))
    monkeypatch.delenv("LAMINA_LOCAL_WORKFLOWS")
    graph, _ = load_graph(shop)
    assert graph is not None and graph.workflows["refund-order"].title == "Refund an order today"


def test_lamina_workflows_lists_ids_titles_aliases_status_and_lines(shop: Path) -> None:
    rc, out, err = _run("workflows", "--workspace", str(shop), "--json")
    assert rc == 0, err
    rows = json.loads(out)
    assert rows == [
        {
            "id": "refund-order",
            "title": "Refund an order",
            "aliases": ["order refund"],
            "status": "active",
            "file": ".lamina/workflows/orders.yaml",
            "line": 2,
            "local": False,
        }
    ]
    rc, out, _ = _run("workflows", "--workspace", str(shop))
    assert "refund-order  Refund an order (aliases: order refund)  .lamina/workflows/orders.yaml:2" in out
    rc, _, err = _run("work", "prepare", "x", "--workflow", "nope", "--workspace", str(shop))
    assert rc == 2 and "lamina workflows" in err


def test_the_engine_refuses_bad_queries_for_every_caller(shop: Path, tmp_path: Path) -> None:
    """The same refusals the CLI makes hold for the server and MCP, which call Engine.query."""
    from index.engine import Engine
    from index.errors import BadInput

    with Engine(shop, index_dir=tmp_path / "idx") as eng:
        eng.sync()
        for kwargs in (
            {"query": ""},
            {"query": "  \n"},
            {"query": "a\x00b"},
            {"query": "x", "top_k": -1},
            {"query": "x", "top_k": 0},
            {"query": "x", "top_k": 10_000},
            {"query": "x", "legs": "sideways"},
        ):
            with pytest.raises(BadInput):
                eng.query(**kwargs)  # type: ignore[arg-type]
        assert eng.query("refund", legs="lexical", top_k=1000).hits


def _workspace_file(shop: Path, text: str) -> Path:
    (shop / ".lamina" / "config.toml").write_text(text)
    return shop


def test_the_workspace_file_s_history_bound_is_read_and_the_environment_overrides_it(
    shop: Path, tmp_path: Path
) -> None:
    """`.lamina/config.toml` sets the bound for every process without one of its own (a CLI with
    the environment unset reads it too, so it does not re-read a server's history); an environment
    variable still wins for its own process."""
    ws = _workspace_file(shop, "[history]\nmax_commits = 1\nmax_years = 0\n")
    idx = str(tmp_path / "idx")
    assert run_cli("search", "refund", "--workspace", str(ws), "--index-dir", idx).returncode == 0
    out = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx).stdout
    assert (
        "history     on (newest 1 commit read, all vote; 1 commit reachable from HEAD (the bound: older ones are not read), 1 can vote;"
        in out
    ), out
    env = {"LAMINA_HISTORY_MAX_COMMITS": "3", "LAMINA_HISTORY_MAX_YEARS": "2"}
    assert run_cli("search", "refund", "--workspace", str(ws), "--index-dir", idx, env=env).returncode == 0
    out = run_cli("context", "status", "--workspace", str(ws), "--index-dir", idx, env=env).stdout
    assert "history     on (newest 3 commits read, those of the last 2 years vote;" in out, out
    assert "(the bound" not in out, out  # the shop's few commits are all read


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[history\n", "is not valid TOML"),
        ("[history]\nmax_comits = 1\n", "max_comits"),
        ("[history]\nmax_commits = 0\n", "$.history.max_commits"),
        ("[history]\nmax_years = 'five'\n", "$.history.max_years"),
        ("history = 3\n", "$.history"),
        ("[histroy]\nmax_commits = 1\n", "histroy"),
    ],
)
def test_a_bad_workspace_file_is_refused_with_a_code(shop: Path, tmp_path: Path, text: str, said: str) -> None:
    ws = _workspace_file(shop, text)
    p = run_cli("search", "refund", "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"))
    assert p.returncode == 2 and p.stderr.startswith("LAMINA_BAD_INPUT: .lamina/config.toml"), p.stderr
    assert said in p.stderr and "fix:" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda f, tmp: f.symlink_to("/dev/zero"), "is a link to /dev/zero, outside the workspace"),
        (lambda f, tmp: f.symlink_to(tmp / "outside.toml"), "outside the workspace"),
        (lambda f, tmp: os.mkfifo(f), "is not a regular file"),
        (lambda f, tmp: f.write_text("# " + "x" * 70_000 + "\n"), "is larger than 64 KiB"),
        (lambda f, tmp: f.mkdir(), "is not a regular file"),
    ],
    ids=["dev-zero", "outside", "fifo", "huge", "folder"],
)
def test_a_workspace_file_that_is_no_small_regular_file_inside_is_refused_at_once(
    shop: Path, tmp_path: Path, make: Any, said: str
) -> None:
    """The repository decides what `.lamina/config.toml` is: a committed link to /dev/zero grew every
    Lamina process without limit, a FIFO hung it, a link outside was read as the repository's."""
    (tmp_path / "outside.toml").write_text("[history]\nmax_commits = 3\n")
    make(shop / ".lamina" / "config.toml", tmp_path)
    p = run_cli("search", "refund", "--workspace", str(shop), "--index-dir", str(tmp_path / "idx"), timeout=30)
    assert p.returncode == 2 and p.stderr.startswith("LAMINA_BAD_INPUT: .lamina/config.toml"), p.stderr
    assert said in p.stderr and "fix:" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("where", "said"),
    [("", "the workspace path is empty"), ("missing", "does not exist"), ("file", "is not a directory")],
)
def test_a_workspace_that_is_empty_missing_or_a_file_is_refused_with_a_code(
    shop: Path, tmp_path: Path, where: str, said: str
) -> None:
    """`--workspace ""` is not the current folder (which could be a whole home directory)."""
    (tmp_path / "file").write_text("x")
    path = {"": "", "missing": str(tmp_path / "missing"), "file": str(tmp_path / "file")}[where]
    for argv in (["search", "refund"], ["workflows"], ["context", "status"], ["work", "prepare", "refund"]):
        rc, out, err = _run(*argv, "--workspace", path, "--index-dir", str(tmp_path / "idx"))
        assert rc == 2 and err.startswith("LAMINA_WORKSPACE_INVALID: ") and said in err, (argv, err)
        assert "Traceback" not in err and not (tmp_path / "idx").exists()


def test_a_workspace_that_holds_lamina_s_own_cache_settles(shop: Path, tmp_path: Path) -> None:
    """The cache's folders carry CACHEDIR.TAG, which the file walker honours: a workspace that
    contains LAMINA_CACHE_DIR does not index Lamina's own databases, so a second search finds
    nothing changed instead of building a new generation every time."""
    env = {"LAMINA_CACHE_DIR": str(shop / "cache")}
    for _ in range(3):
        p = run_cli("search", "refund", "--legs", "lexical", "--json", "--workspace", str(shop), env=env)
        assert p.returncode == 0, p.stderr
        assert not [h["file"] for h in json.loads(p.stdout) if h["file"].startswith("cache/")]
    st = run_cli("context", "status", "--json", "--workspace", str(shop), env=env)
    status = json.loads(st.stdout)
    assert status["generation"] == 1 and status["freshness"]["state"] == "fresh", status
    assert (shop / "cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_searches_started_together_on_a_new_workspace_all_answer(shop: Path, tmp_path: Path) -> None:
    """The first takes the writer lock and builds; the others wait for its first generation
    instead of failing with LAMINA_NO_INDEX."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LAMINA_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, "-m", "lsp_server.cli", "search", "refund order", "--legs", "lexical", "--json"]
    procs = [
        subprocess.Popen(
            [*argv, "--workspace", str(shop)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert json.loads(out)[0]["file"] == "shop/refunds.py", out
        assert "LAMINA_NO_INDEX" not in err


def _writer_process(script: str, shop: Path, tmp_path: Path) -> tuple[dict[str, str], subprocess.Popen[str]]:
    """A process running `script` as the index's writer, once it said "ready" (its environment too)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LAMINA_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(shop), str(tmp_path / "idx")],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return env, proc


OPENING_WRITER = """
import sys
from index.engine import Engine
eng = Engine(sys.argv[1], sys.argv[2], writer=True)  # its database is there, no build recorded yet
print("ready", flush=True)
sys.stdin.readline()
eng.sync()
sys.stdin.read()
eng.close()
"""


def test_a_writer_that_has_not_recorded_its_first_build_yet_is_looked_at_again(shop: Path, tmp_path: Path) -> None:
    """The race behind the test above (red once in CI): a writer creates its database as it opens
    and records its first build when its sync starts; a search that looked in between read "not
    building" and failed LAMINA_NO_INDEX at once. It looks again for UNRECORDED_WAIT_S (an idle
    writer is still not waited for: the next test)."""
    import time

    env, writer = _writer_process(OPENING_WRITER, shop, tmp_path)
    try:
        argv = [sys.executable, "-m", "lsp_server.cli", "search", "refund order", "--legs", "lexical", "--json"]
        search = subprocess.Popen(
            [*argv, "--workspace", str(shop), "--index-dir", str(tmp_path / "idx")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(0.9)  # the search has looked (no build recorded), then the writer starts its sync
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        out, err = search.communicate(timeout=120)
        assert search.returncode == 0, err
        assert json.loads(out)[0]["file"] == "shop/refunds.py", out
    finally:
        writer.communicate("", timeout=60)


IDLE_WRITER = """
import sys
from index.engine import Engine
eng = Engine(sys.argv[1], sys.argv[2], writer=True)  # holds the lock, builds nothing
print("ready", flush=True)
sys.stdin.read()
eng.close()
"""


def test_a_writer_that_is_not_building_is_not_waited_for(shop: Path, tmp_path: Path) -> None:
    """Only a first build in flight is waited for: a writer whose build failed (or that never
    started one) leaves the search to say at once that there is no index yet."""
    import time

    _, holder = _writer_process(IDLE_WRITER, shop, tmp_path)
    try:
        t0 = time.monotonic()
        rc, out, err = _run("search", "refund", "--workspace", str(shop), "--index-dir", str(tmp_path / "idx"))
        assert time.monotonic() - t0 < 20
        assert rc == 2 and "LAMINA_NO_INDEX" in err and "waiting" not in err, err
    finally:
        holder.communicate("", timeout=30)


@pytest.mark.parametrize("kind", ["bare", "mirror", "dot-git"])
def test_a_bare_repository_or_a_git_folder_is_refused_with_a_code(shop: Path, tmp_path: Path, kind: str) -> None:
    """A git directory has no work tree: indexed as a folder, git's objects/, refs/ and hooks/ were
    walked. `git init --bare`, a `--mirror` clone (no config file needed) and a checkout's .git."""
    if kind == "bare":
        git(tmp_path, "init", "-q", "--bare", "x.git")
        path, said = tmp_path / "x.git", "is a bare git repository"
    elif kind == "mirror":
        git(tmp_path, "clone", "-q", "--mirror", str(shop), "m.git")
        (tmp_path / "m.git" / "config").unlink()  # as fetched mirrors are: HEAD, objects/, refs/ only
        path, said = tmp_path / "m.git", "is a bare git repository"
    else:
        path, said = shop / ".git", f"as the workspace: {shop}"
    for argv in (["search", "refund"], ["context", "rebuild"], ["work", "prepare", "refund"]):
        rc, _, err = _run(*argv, "--workspace", str(path), "--index-dir", str(tmp_path / "idx"))
        assert rc == 2 and err.startswith("LAMINA_WORKSPACE_INVALID: ") and said in err, (argv, err)
        assert "fix:" in err and "Traceback" not in err and not (tmp_path / "idx").exists()


def test_a_workspace_whose_path_is_not_utf8_is_refused_with_a_code(tmp_path: Path) -> None:
    """A folder named in Latin-1 (`caf\\xe9`): the index records its workspace by name, and the
    name could not be stored (LAMINA_INTERNAL, a UnicodeEncodeError)."""
    ws = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    write(ws, "shop/refunds.py", "def refund_order(order):\n    return order.total\n")
    rc, _, err = _run(
        "search", "refund order", "--legs", "lexical", "--workspace", str(ws), "--index-dir", str(tmp_path / "i")
    )
    assert rc == 2 and err.startswith("LAMINA_WORKSPACE_INVALID: ") and "caf\\xe9 is not a UTF-8 path" in err, err
    assert "fix: rename the folder" in err and "Traceback" not in err


def test_a_checkout_a_linked_worktree_and_a_plain_folder_are_still_workspaces(shop: Path, tmp_path: Path) -> None:
    """Only a git directory is refused: not a linked worktree (its .git is a file), nor a plain
    folder that happens to hold objects/, refs/ and a HEAD that names no ref."""
    git(shop, "worktree", "add", "-q", str(tmp_path / "wt"))
    plain = tmp_path / "plain"
    write(plain, "shop/refunds.py", "def refund_order(order):\n    return order.total\n")
    write(plain, "HEAD", "the head of the project\n")
    (plain / "objects").mkdir()
    (plain / "refs").mkdir()
    for ws in (shop, tmp_path / "wt", plain):
        p = run_cli("search", "refund order", "--legs", "lexical", "--json", "--workspace", str(ws))
        assert p.returncode == 0, (ws, p.stderr)
        assert json.loads(p.stdout)[0]["file"] == "shop/refunds.py"


def _pending_generation(db: Path) -> bool:
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return bool(con.execute("SELECT count(*) FROM generations WHERE state='pending'").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return False


def test_sigterm_stops_a_build_like_ctrl_c_and_says_so(tmp_path: Path) -> None:
    """SIGTERM (a timeout, `docker stop`, a CI runner) ended a build with no word and status -15.
    It now stops like Ctrl-C: one LAMINA_INTERRUPTED line, 128 + 15, and the next command works."""
    import signal
    import time

    ws = tmp_path / "ws"
    for i in range(2500):  # a build of a few seconds: still running when the signal comes
        body = "".join(f"def settle_{i}_{j}(x):\n    '''Settle part {j}.'''\n    return x + {j}\n\n" for j in range(6))
        write(ws, f"pkg/d{i % 25}/m{i}.py", body)
    write(ws, "billing/invoices.py", "def reconcile_invoice_ledger(invoice):\n    return invoice.total\n")
    idx = tmp_path / "idx"
    env = dict(os.environ, PYTHONPATH=str(ROOT), LAMINA_CACHE_DIR=str(tmp_path / "cache"))
    argv = [
        sys.executable,
        "-m",
        "lsp_server.cli",
        "context",
        "rebuild",
        "--workspace",
        str(ws),
        "--index-dir",
        str(idx),
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _pending_generation(idx / "index.sqlite"):  # inside the build
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert err.startswith("LAMINA_INTERRUPTED: stopped (SIGTERM)"), err
    assert "last complete generation" in err and "run the command again" in err
    assert len(err.splitlines()) == 1 and out == ""
    p = run_cli("search", "reconcile invoice ledger", "--legs", "lexical", "--json", "--workspace", str(ws),
                "--index-dir", str(idx), env={"LAMINA_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["file"] == "billing/invoices.py"


def test_python_m_lsp_server_takes_serve_as_lamina_does(tmp_path: Path) -> None:
    """`python -m lsp_server serve` (the way `lamina serve` is typed) said "unrecognized arguments"."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAMINA_CACHE_DIR": str(tmp_path / "cache")}
    for argv in (["serve"], []):
        got = subprocess.run(
            [sys.executable, "-m", "lsp_server", *argv], input="", capture_output=True, text=True, env=env, timeout=60
        )
        assert got.returncode == 0 and "LAMINA_" not in got.stderr, (argv, got.stderr)


def test_without_the_model_status_and_search_say_why_the_dense_leg_is_off(shop: Path, tmp_path: Path) -> None:
    """`lexical_degraded` alone left a user guessing: the status names the missing asset and the fix,
    and a search's note says what happened, not only its code."""
    env = {"LAMINA_MODEL_DIR": str(tmp_path / "no-model"), "LAMINA_CACHE_DIR": str(tmp_path / "cache")}
    where = ["--workspace", str(shop), "--index-dir", str(tmp_path / "idx")]
    p = run_cli("search", "refund", *where, env=env)
    assert p.returncode == 0, p.stderr
    missing = f"embedding asset missing: {tmp_path / 'no-model' / 'model.onnx'}"
    assert f"dense leg unavailable: LAMINA_RETRIEVAL_INTEGRITY: {missing} — run: python -m assets.install" in p.stderr
    p = run_cli("context", "status", *where, env=env)
    assert p.returncode == 0, p.stderr
    assert "retrieval   lexical_degraded" in p.stdout
    assert f"dense leg   off: LAMINA_RETRIEVAL_INTEGRITY: {missing} (run: python -m assets.install" in p.stdout
    p = run_cli("context", "status", "--json", *where, env=env)
    assert json.loads(p.stdout)["dense_unavailable"].startswith(f"LAMINA_RETRIEVAL_INTEGRITY: {missing}")


def test_a_query_file_past_the_read_cap_says_it_was_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 26.7 MB query file was read to 16 MiB silently: the engine's note then named 16,777,216
    characters as if that were the file."""
    import lsp_server.cli_common as cli_common

    monkeypatch.setattr(cli_common, "MAX_INPUT_FILE_BYTES", 1024 * 1024)
    path = tmp_path / "report.txt"
    path.write_text("refund twice " * 100_000)  # 1.3 MB
    got = cli_common.read_text_input(None, str(path), what="query", usage="lamina search")
    assert len(got) == 1024 * 1024
    err = capsys.readouterr().err
    assert f"note: query file {path} is longer than 1 MiB: only its first 1 MiB were read" in err, err
    path.write_text("é" * 600_000, encoding="utf-8")  # the cap falls inside a two-byte character
    monkeypatch.setattr(cli_common, "MAX_INPUT_FILE_BYTES", 1024 * 1024 + 1)
    assert cli_common.read_text_input(None, str(path), what="query", usage="lamina search") == "é" * (512 * 1024)
    capsys.readouterr()
    path.write_text("refund twice")
    assert cli_common.read_text_input(None, str(path), what="query", usage="lamina search") == "refund twice"
    assert capsys.readouterr().err == ""


def test_an_unknown_argument_is_refused_by_the_command_that_got_it() -> None:
    """`lamina search --bogus x` pointed at `lamina --help`, `lamina context status --nope` got the
    hint about queries that start with '-', and `lamina search refund order` said nothing about quoting."""
    from tests.conftest import run_cli

    got = run_cli("search", "--bogus", "x")
    assert got.returncode == 2 and "see: lamina search --help" in got.stderr, got.stderr
    got = run_cli("context", "status", "--nope")
    assert got.returncode == 2 and got.stderr.startswith("LAMINA_BAD_INPUT: lamina context status:"), got.stderr
    assert "see: lamina context status --help" in got.stderr and "after `--`" not in got.stderr
    got = run_cli("search", "refund", "order")
    assert got.returncode == 2 and 'quote it (lamina search "refund an order")' in got.stderr, got.stderr


def test_a_search_of_an_empty_index_says_it_is_empty_not_that_the_word_is_misspelt(tmp_path: Path) -> None:
    """A workspace with no indexable file (a fresh `git init`) told the user their word was "a
    misspelling, or a name that changed"."""
    from tests.conftest import run_cli

    ws = tmp_path / "empty"
    ws.mkdir()
    got = run_cli("search", "refund", "--workspace", str(ws), "--legs", "lexical", "--index-dir", str(tmp_path / "i"))
    assert got.returncode == 0, got.stderr
    assert "the index holds no file" in got.stderr and "misspelling" not in got.stderr, got.stderr


def test_search_json_with_state_says_whether_the_answer_is_degraded(tmp_path: Path) -> None:
    """`search --json` is a list of hits: a script could not tell a lexical_degraded or partial
    answer from a full one without reading stderr. `--with-state` puts the state beside the hits."""
    import shutil

    from tests.conftest import ROOT, run_cli

    ws = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", ws, ignore=shutil.ignore_patterns("node_modules"))
    common = ("--workspace", str(ws), "--index-dir", str(tmp_path / "i"))
    got = run_cli("search", "refund an order", "--json", "--with-state", "--legs", "lexical", *common)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert {"query", "legs", "retrieval", "generation", "pending_embeddings", "notes", "hits"} <= set(out)
    assert out["retrieval"] == "lexical" and out["generation"] and out["hits"][0]["file"].endswith(".py")
    # without a model the hybrid answer is lexical_degraded, and says so in the object
    env = {"LAMINA_MODEL_DIR": str(tmp_path / "no-model")}
    got = run_cli("search", "refund an order", "--json", "--with-state", *common, env=env)
    assert got.returncode == 0 and json.loads(got.stdout)["retrieval"] == "lexical_degraded", got.stdout[:300]
    refused = run_cli("search", "refund", "--with-state", *common)
    assert refused.returncode == 2 and "--with-state shapes the --json output" in refused.stderr
