"""Races of a real `lamina serve`, each provoked on purpose rather than waited for.

The server runs with a `sitecustomize` (on its PYTHONPATH, test-only) that holds it at one
point while a marker file exists and drops marker files as it passes others, so each race
happens every time:

* the model load held: a search during the first sync loaded the ONNX model on its request
  thread (1-3 s under load, holding a thread of the query lane meanwhile);
* a folder's close held while its `.lamina/config.toml` reopens it: a folder the client
  removed meanwhile was opened again (service, watcher, requests routed to it);
* an event watchdog's emitter reads held back until the emitter is being stopped: closing a
  folder while files change logged "InotifyEmitter.queue_events() called when the thread is
  inactive";
* a watcher still adding its watches when its folder closes: its thread outlived the close.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.folders import Folders
from tests.conftest import ledger_repo, write
from tests.lsp_session import Session, copy_shop, server_env, wait_for

HOOKS = r'''
import json, logging, os, threading, time
from pathlib import Path

D = Path(os.environ["S50_HOOKS"])


def _mark(name, text=""):
    tmp = D / (name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, D / name)


def _hold(name):
    deadline = time.monotonic() + 60
    while (D / name).exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def _threads():
    return sorted(f"{type(t).__name__}:{t.name}" for t in threading.enumerate())


# The model load: held while `hold-model` exists; `model-loading` names the thread loading it.
from index.embedding import Embedder

_load = Embedder.load.__func__


def _held_load(cls, *args, **kwargs):
    if (D / "hold-model").exists():
        _mark("model-loading", threading.current_thread().name)
        _hold("hold-model")
    return _load(cls, *args, **kwargs)


Embedder.load = classmethod(_held_load)


def _held_at_start(owner, name, hold, marker):
    """`owner.name` held at its start while the file `hold` exists (`marker` says one is)."""
    real = getattr(owner, name)

    def held(self, *args, **kwargs):
        if (D / hold).exists():
            _mark(marker)
            _hold(hold)
        return real(self, *args, **kwargs)

    setattr(owner, name, held)


# A sync: held at its start while `hold-sync` exists (`sync-held` says one is).
from index.engine import Engine

_held_at_start(Engine, "sync", "hold-sync", "sync-held")

# A folder's close: held while `hold-close` exists; `closed` lists the threads alive after it.
from lsp_server.service import IndexService

_close = IndexService.close


def _held_close(self, timeout=10.0):
    if (D / "hold-close").exists():
        _mark("close-entered")
        _hold("hold-close")
    ok = _close(self, timeout)
    _mark("closed", json.dumps({"ok": ok, "threads": _threads()}))
    return ok


IndexService.close = _held_close

# An embedding pass: held at its start while `hold-embed` exists (`embed-held` says one is).
from lsp_server.embed_worker import EmbedWorker

_held_at_start(EmbedWorker, "_pass", "hold-embed", "embed-held")

# A hover that fails in a way nobody planned for while `fail-hover` exists.
from lsp_server.features import hover as _hover_mod

_hover_at = _hover_mod.hover_at


def _failing_hover_at(*args, **kwargs):
    if (D / "fail-hover").exists():
        raise ValueError("day is out of range for month")
    return _hover_at(*args, **kwargs)


_hover_mod.hover_at = _failing_hover_at

# The end of a `.lamina/config.toml` reopen (on the task executor).
from lsp_server.server import LaminaServer

_reopen = LaminaServer._reopen_folder


def _marked_reopen(self, *args, **kwargs):
    try:
        return _reopen(self, *args, **kwargs)
    finally:
        _mark("reopen-done", json.dumps(_threads()))


LaminaServer._reopen_folder = _marked_reopen

# watchdog's emitter stopping: with `widen-stop`, an event the emitter reads is handed back only
# once its watch group is being deactivated, i.e. after the emitter was told to stop (the window
# the error was logged in); `stop-widened` says whether an event was handed back in it.
from watchdog.observers import inotify as _inotify

_read = _inotify.InotifyWatchGroup.read_event
_deactivate = _inotify.InotifyWatchGroup.deactivate
_stop_began = {}
_delivered = {}


def _read_event(self):
    event = _read(self)
    if event is not None and (D / "widen-stop").exists():
        _stop_began.setdefault(id(self), threading.Event()).wait(20)
        _delivered.setdefault(id(self), threading.Event()).set()
    return event


def _widened_deactivate(self):
    if (D / "widen-stop").exists():
        _stop_began.setdefault(id(self), threading.Event()).set()
        delivered = _delivered.setdefault(id(self), threading.Event())
        delivered.wait(5)
        _mark("stop-widened", str(delivered.is_set()))
    return _deactivate(self)


_inotify.InotifyWatchGroup.read_event = _read_event
_inotify.InotifyWatchGroup.deactivate = _widened_deactivate


# A watcher still adding its watches (a big tree takes seconds): with `hold-observe`, held until
# the folder's close has returned (`closed`), or 3 s.
from lsp_server.watcher import Watcher

_observe = Watcher._observe


def _held_observe(self):
    if (D / "hold-observe").exists():
        _mark("observe-held")
        deadline = time.monotonic() + 3
        while not (D / "closed").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
    return _observe(self)


Watcher._observe = _held_observe


class _Errors(logging.Handler):
    """Every error record the server's watcher side emits (after the loggers' filters)."""

    def emit(self, record):
        if record.levelno >= logging.ERROR:
            with open(D / "errors", "a", encoding="utf-8") as f:
                f.write(f"{record.name}: {record.getMessage()}\n")


for _name in ("watchdog", "lsp_server"):
    logging.getLogger(_name).addHandler(_Errors())


def _dumps():
    """`dump` asks for the threads alive now: written to `threads`."""
    while True:
        if (D / "dump").exists():
            _mark("threads", json.dumps(_threads()))
            (D / "dump").unlink()
        time.sleep(0.01)


threading.Thread(target=_dumps, name="s50-probe", daemon=True).start()
'''

INDEX_THREADS = ("lamina-sync-", "lamina-embed", "lamina-watch", "InotifyObserver", "InotifyEmitter")


def _hooked_env(tmp_path: Path, **extra: str) -> tuple[dict[str, str], Path]:
    site, hooks = tmp_path / "site", tmp_path / "hooks"
    site.mkdir()
    hooks.mkdir()
    (site / "sitecustomize.py").write_text(HOOKS, encoding="utf-8")
    env = server_env(tmp_path / "cache", S50_HOOKS=str(hooks), **extra)
    env["PYTHONPATH"] = str(site) + os.pathsep + env["PYTHONPATH"]
    return env, hooks


def _held_session(tmp_path: Path, ws: Path, hold: str, marker: str, **extra: str) -> tuple[Session, Path]:
    """A server on `ws` started with `hold-<hold>` in place, once the hook says (`marker`) it holds."""
    env, hooks = _hooked_env(tmp_path, **extra)
    (hooks / f"hold-{hold}").touch()
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        wait_for(lambda: (hooks / marker).exists(), 20, f"the server to reach the held {hold}")
    except BaseException:
        (hooks / f"hold-{hold}").unlink(missing_ok=True)
        s.close()
        raise
    return s, hooks


def _status(s: Session, ws: Path) -> dict[str, Any] | None:
    try:
        return s.request("lamina/contextStatus", {"folder": ws.as_uri()})
    except Exception:  # LAMINA_FOLDER_REOPENING while its previous index closes
        return None


def _index_threads(names: list[str]) -> list[str]:
    return [n for n in names if any(part in n for part in INDEX_THREADS)]


def _threads(hooks: Path) -> list[str]:
    """The server's threads, as its probe lists them now."""
    (hooks / "threads").unlink(missing_ok=True)
    (hooks / "dump").touch()
    got: list[str] = json.loads(wait_for(lambda: _read(hooks / "threads"), 10, "the server's threads"))
    return got


def _settled(s: Session) -> None:
    s.wait_generation(30)
    wait_for(lambda: s.states[-1]["freshness"] == "fresh", 30, "the first build to settle")


# -- 1. the model loads on the index side; a search meanwhile answers lexically ---------------------
def test_a_search_while_the_model_loads_answers_lexically_at_once_and_says_so(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    first = Session(ws, tmp_path / "index", env, work_done_progress=False)  # the index this session finds
    _settled(first)
    assert first.close() == 0
    (hooks / "hold-model").touch()
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        wait_for(lambda: (hooks / "model-loading").exists(), 20, "the model's load to begin")
        assert (hooks / "model-loading").read_text() == "lamina-embed"  # the index side loads it
        res = s.request("lamina/search", {"query": "refund an order"}, timeout=10)  # the load is held: not waited for
        assert res["hits"], res
        assert res["retrieval"] == "lexical_degraded", res["retrieval"]
        loading = [n for n in res["notes"] if "LAMINA_DENSE_UNAVAILABLE" in n]
        assert loading and "loading" in loading[0], res["notes"]
        err = s.error("lamina/prepare", {"task": "the totals look wrong after a sale"})  # selection needs the model
        assert err["code"] == "LAMINA_DENSE_UNAVAILABLE" and "still loading" in err["message"], err
        # status and the state notification say the same: the model is loading (not "degraded")
        st = s.request("lamina/contextStatus", {}, timeout=10)
        assert st["model"] == st["indexState"]["model"] == "loading", st
        assert st["retrieval"] == st["indexState"]["retrieval"] in ("hybrid", "hybrid_partial"), st
        wait_for(lambda: s.states and s.states[-1]["model"] == "loading", 10, "the state to say the model is loading")
        top = res["hits"][0]
        hover = s.hover(ws / top["file"], top["start_line"] - 1)
        assert hover and "model is loading" in hover, hover
    finally:
        (hooks / "hold-model").unlink(missing_ok=True)
    try:
        # The load ends (no model here): said once; the readers take the outcome from the next search.
        wait_for(
            lambda: [m for _, m in s.messages if m.startswith("LAMINA_RETRIEVAL_INTEGRITY")], 20, "the model's failure"
        )
        notes = s.search("refund an order")["notes"]
        assert any("LAMINA_RETRIEVAL_INTEGRITY" in n for n in notes), notes
        assert not any("loading" in n for n in notes), notes
        assert len([m for _, m in s.messages if m.startswith("LAMINA_RETRIEVAL_INTEGRITY")]) == 1
        wait_for(lambda: s.states[-1]["model"] == "unavailable", 10, "the state to say the model is unavailable")
        assert s.states[-1]["retrieval"] == "lexical_degraded", s.states[-1]
        st = s.request("lamina/contextStatus", {}, timeout=10)
        assert st["model"] == "unavailable" and st["retrieval"] == "lexical_degraded", st
    finally:
        assert s.close() == 0


@pytest.mark.model
def test_once_the_model_has_loaded_the_next_search_is_hybrid(tmp_path: Path) -> None:
    s, hooks = _held_session(tmp_path, ledger_repo(tmp_path / "ws", 20), "model", "model-loading")
    try:
        s.wait_generation(30)
        res = s.request("lamina/search", {"query": "settle the ledger"}, timeout=10)
        assert res["retrieval"] == "lexical_degraded" and res["hits"], res
        assert s.states[-1]["model"] == "loading", s.states[-1]
        (hooks / "hold-model").unlink()
        wait_for(lambda: s.states[-1]["model"] == "ready", 60, "the state to say the model is ready")
        wait_for(
            lambda: s.search("settle the ledger")["retrieval"] in ("hybrid", "hybrid_partial"),
            60,
            "the dense leg to join once the model is loaded",
        )
        assert not [m for _, m in s.messages if "LAMINA_RETRIEVAL_INTEGRITY" in m]
    finally:
        (hooks / "hold-model").unlink(missing_ok=True)
        assert s.close() == 0


@pytest.mark.model
def test_the_model_s_load_is_announced_while_the_first_build_still_runs(tmp_path: Path) -> None:
    """The writer left it to its first embedding pass to say how the load ended, and that pass waits
    for the first build: a big repository's status bar read "loading model" for the whole build
    while contextStatus already said otherwise."""
    s, hooks = _held_session(tmp_path, ledger_repo(tmp_path / "ws", 20), "sync", "sync-held")
    try:
        wait_for(lambda: s.states and s.states[-1]["model"] == "ready", 30, "the load's end said during the build")
        assert s.states[-1]["generation"] is None and s.states[-1]["freshness"] == "syncing", s.states[-1]
        assert s.states[-1]["retrieval"] == "none", s.states[-1]
    finally:
        (hooks / "hold-sync").unlink(missing_ok=True)
    try:
        _settled(s)
        assert s.states[-1]["model"] == "ready" and s.states[-1]["retrieval"] in ("hybrid", "hybrid_partial")
    finally:
        assert s.close() == 0


def test_a_task_set_during_the_first_build_stays_preparing_until_its_generation_answers(tmp_path: Path) -> None:
    """The packet failed with LAMINA_NO_INDEX and the panel showed that error, whose remedy ("ask
    again once a generation exists") the server then followed by itself."""
    no_model = {"LAMINA_MODEL_DIR": str(tmp_path / "no-model")}
    s, hooks = _held_session(tmp_path, copy_shop(tmp_path / "shop"), "sync", "sync-held", **no_model)
    try:
        got = s.request("lamina/setTask", {"task": "refund-order: refund a payment captured twice"}, timeout=10)
        assert got["accepted"] is True
        wait_for(lambda: s.packets, 10, "the task's first packetChanged")
        time.sleep(3 * 2.0)  # several retries of the packet while the build is held
        assert [p["state"] for p in s.packets] == ["preparing"], s.packets
    finally:
        (hooks / "hold-sync").unlink(missing_ok=True)
    try:
        wait_for(lambda: s.packets[-1]["state"] == "ready", 30, "the packet once the first generation is in")
        assert all(p["state"] != "error" for p in s.packets), s.packets
    finally:
        assert s.close() == 0


@pytest.mark.model
def test_a_packet_prepared_before_the_vectors_is_prepared_again_once_they_are_in(tmp_path: Path) -> None:
    """A packet prepared while vectors were pending stayed hybrid_partial until some file changed:
    the panel kept answering without the spans' vectors long after they were in."""
    s, hooks = _held_session(tmp_path, copy_shop(tmp_path / "shop"), "embed", "embed-held")
    try:
        s.wait_generation(60)
        s.request("lamina/setTask", {"task": "refund a payment that was captured twice"}, timeout=10)
        first = wait_for(
            lambda: (p := s.request("lamina/getPacket"))["state"] == "ready" and p, 30, "a packet before the vectors"
        )
        assert first["packet"]["retrieval"]["retrieval"] == "hybrid_partial", first["packet"]["retrieval"]
    finally:
        (hooks / "hold-embed").unlink(missing_ok=True)
    try:
        got = wait_for(
            lambda: (r := s.request("lamina/getPacket")["packet"]["retrieval"])["retrieval"] == "hybrid" and r,
            120,
            "the packet prepared again once every vector is in",
        )
        assert got["pending_embeddings"] == 0, got
    finally:
        assert s.close() == 0


def test_an_unexpected_failure_in_a_feature_is_lamina_internal_without_a_traceback(tmp_path: Path) -> None:
    """pygls answered a hover that raised with its Python traceback in the error's data (a workflow
    YAML with an impossible date did it)."""
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    ws = ledger_repo(tmp_path / "ws", 5)
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        _settled(s)
        (hooks / "fail-hover").touch()
        from pygls.exceptions import JsonRpcException

        with pytest.raises(JsonRpcException) as failed:
            s.hover(next(ws.rglob("*.py")), 0)
        err = dict(failed.value.data or {})
        assert err["code"] == "LAMINA_INTERNAL" and "traceback" not in err, err
        assert "day is out of range for month" in err["message"] and "output channel" in err["remedy"], err
        (hooks / "fail-hover").unlink()
        s.error("lamina/search", {"query": "x", "topK": -1})  # the server lives on and answers
    finally:
        assert s.close() == 0


# -- 2. a folder removed while its config reopen is in flight stays removed -----------------------
def _reopen_held(s: Session, ws: Path, hooks: Path) -> None:
    """Edit the history bound and hold the reopen in its close of the folder's old service."""
    (hooks / "hold-close").touch()
    write(ws, ".lamina/config.toml", "[history]\nmax_commits = 5\n")
    wait_for(lambda: (hooks / "close-entered").exists(), 15, "the reopen to close the old service")


def test_a_folder_removed_while_its_config_reopen_is_in_flight_stays_removed(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 20)
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        _settled(s)
        _reopen_held(s, ws, hooks)
        s.change_folders(added=[], removed=[ws])
        seen = len(s.states)
        (hooks / "hold-close").unlink()
        wait_for(lambda: (hooks / "reopen-done").exists(), 15, "the reopen to end")
        err = s.error("lamina/contextStatus", {"folder": ws.as_uri()})
        assert err["code"] == "LAMINA_BAD_INPUT", err  # not open, nor "being reopened"
        assert s.error("lamina/contextStatus")["code"] == "LAMINA_WORKSPACE_INVALID"  # no folder at all
        assert s.error("lamina/search", {"query": "settle_ledger_3"})["code"] == "LAMINA_WORKSPACE_INVALID"
        write(ws, "pkg/late.py", "def late_quokka():\n    return 1\n")  # nothing watches it
        threads = _threads(hooks)
        assert _index_threads(threads) == [], threads  # no sync, embedder or watcher left running
        time.sleep(0.3)  # no state may follow for a folder that is gone
        assert [st for st in s.states[seen:] if st["folder"] == ws.resolve().as_uri()] == []
        assert "Traceback" not in "".join(s.stderr), "".join(s.stderr)
    finally:
        (hooks / "hold-close").unlink(missing_ok=True)
        assert s.close() == 0


class _Service:
    """What Folders routes by and closes (opening a real index is not its concern)."""

    def __init__(self, folder: Path, index_dir: Path | None) -> None:
        self.workspace = folder
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_reopen_puts_a_service_in_only_if_the_folder_was_not_removed_meanwhile(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    folders = Folders(_Service)  # type: ignore[arg-type]
    folders.add(folder, None)
    taken = folders.take_for_reopen(folder, "its .lamina/config.toml changed")
    assert taken is not None
    _, ticket = taken
    folders.remove(folder)  # the client removed it while the old service closed
    assert folders.add(folder, None, ticket) is None
    assert folders.all() == [] and folders.errors == {}
    assert folders.take_for_reopen(folder, "again") is None  # nothing left to reopen

    made: list[_Service] = []

    def removed_while_opening(f: Path, index_dir: Path | None) -> _Service:
        made.append(_Service(f, index_dir))
        folders.remove(f)  # the removal lands while the new index opens
        return made[-1]

    folders.add(folder, None)
    _, ticket = folders.take_for_reopen(folder, "its .lamina/config.toml changed") or (None, -1)
    folders._make = removed_while_opening  # type: ignore[assignment]
    assert folders.add(folder, None, ticket) is None
    assert made[0].closed and folders.all() == []
    folders._make = _Service  # type: ignore[assignment]
    assert folders.add(folder, None) is not None  # added again by the client: opens as ever


def test_a_folder_removed_and_added_again_during_its_config_reopen_opens_once_as_the_writer(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 20)
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        _settled(s)
        _reopen_held(s, ws, hooks)
        s.change_folders(added=[], removed=[ws])
        s.change_folders(added=[ws], removed=[])
        assert s.error("lamina/contextStatus", {"folder": ws.as_uri()})["code"] == "LAMINA_FOLDER_REOPENING"
        (hooks / "hold-close").unlink()
        st = wait_for(
            lambda: (_status(s, ws) or {}).get("history_max_commits") == 5 and _status(s, ws),
            30,
            "the folder open again, its history read with the bound that was edited",
        )
        assert st["server"]["mode"] == "writer", st["server"]
        assert not [m for _, m in s.messages if m.startswith("LAMINA_INDEX_LOCKED")], s.messages
        assert "Traceback" not in "".join(s.stderr), "".join(s.stderr)
    finally:
        (hooks / "hold-close").unlink(missing_ok=True)
        assert s.close() == 0


# -- 3. closing a folder while file events arrive is quiet -----------------------------------------
def test_closing_a_folder_while_files_change_logs_no_error_and_leaves_no_watcher_thread(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 20)
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            write(ws, f"churn/f{i % 40}.py", f"value = {i}\n")
            i += 1
            time.sleep(0.002)

    writer = threading.Thread(target=churn, daemon=True)
    try:
        _settled(s)
        wait_for(lambda: (_status(s, ws) or {}).get("server", {}).get("watcher") == "running", 15, "the watcher")
        (hooks / "widen-stop").touch()
        writer.start()  # the emitter holds the first event it reads until it is stopping
        s.change_folders(added=[], removed=[ws])
        closed = json.loads(wait_for(lambda: _read(hooks / "closed"), 30, "the folder's close"))
    finally:
        stop.set()
        if writer.is_alive():
            writer.join(5)
    try:
        assert (hooks / "stop-widened").read_text() == "True"  # the emitter had an event as it stopped
        assert _read(hooks / "errors") is None, _read(hooks / "errors")
        assert closed["ok"] is True
        assert _index_threads(closed["threads"]) == [], closed["threads"]
        assert not [line for line in s.stderr if "inactive" in line or " ERROR " in line], s.stderr
    finally:
        assert s.close() == 0


def test_a_folder_closed_while_its_watcher_is_still_starting_leaves_no_watcher_thread(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 20)
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    (hooks / "hold-observe").touch()
    s = Session(ws, tmp_path / "index", env, work_done_progress=False)
    try:
        _settled(s)
        wait_for(lambda: (hooks / "observe-held").exists(), 15, "the watcher to be adding its watches")
        s.change_folders(added=[], removed=[ws])
        closed = json.loads(wait_for(lambda: _read(hooks / "closed"), 30, "the folder's close"))
        assert closed["ok"] is True
        assert _index_threads(closed["threads"]) == [], closed["threads"]  # the starter was waited for
        assert _read(hooks / "errors") is None, _read(hooks / "errors")
    finally:
        assert s.close() == 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def test_a_folder_removed_mid_build_logs_no_failure(tmp_path: Path) -> None:
    """Removing a folder (or shutting down) cancels its build: asked for, and it was logged as
    `ERROR ... sync failed: LAMINA_BUILD_CANCELLED` in the editor's output."""
    ws = tmp_path / "big"
    for i in range(1500):
        write(ws, f"pkg{i % 30}/m{i}.py", "".join(f"def f{i}_{j}(x):\n    return x * {j}\n\n" for j in range(10)))
    env, hooks = _hooked_env(tmp_path, LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, work_done_progress=True)
    try:
        wait_for(lambda: s.states and s.states[-1]["freshness"] == "syncing", 20, "the first build")
        time.sleep(0.3)  # well inside the build (it takes seconds)
        s.change_folders(added=[], removed=[ws])
        wait_for(lambda: _read(hooks / "closed"), 30, "the folder's close")
        assert _read(hooks / "errors") is None, _read(hooks / "errors")
        assert not [line for line in s.stderr if "sync failed" in line], s.stderr
    finally:
        assert s.close() == 0
