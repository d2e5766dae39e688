"""How long an editor waits on `lamina serve`: hover, codeLens and search latency idle, during the
first full build and during a rebuild, plus shutdown in the middle of a rebuild.

    python -m bench.lsp_latency [--corpus shop|stdlib|both] [--duration 15] [--rate 20]
        [--label before|after] [--work-dir /tmp/lamina-lsp-bench] [--out bench/results/lsp_latency.json]
        [--server-cmd "PYTHON -m lsp_server.cli serve"] [--server-root DIR] [--timeout 60] [--no-model]

A benchmark, not a test. The real server runs as a subprocess over stdio, driven by pygls'
LanguageClient announcing VS Code-like capabilities. Requests go out on a fixed schedule (open
loop: the next one never waits for the previous answer) and are timed from send to response.
Runs are stored under their `--label` in one JSON file, so `before` and `after` print side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cattrs import Converter
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCResponseMessage, default_converter

from bench.common import engine_revision, format_table
from bench.metrics import percentile
from bench.speed import copy_stdlib, make_queries
from lsp_server.params import plain

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
SCHEMA = "lamina.bench.lsp_latency/1"

KINDS = ("hover", "codeLens", "search", "unknown")  # unknown: a method nobody serves, so pure protocol latency
PHASES = ("build", "idle", "rebuild")
# The targets, p95 while the index is being (re)built; shutdown at any time.
TARGET_P95_MS = {"hover": 50.0, "codeLens": 50.0, "search": 250.0}
TARGET_SHUTDOWN_S = 1.0
UNKNOWN_METHOD = "lamina/benchNoSuchMethod"
STATE_KEYS = ("generation", "freshness", "retrieval", "pending", "embedding", "queued")
STDLIB_HOVER_FILES = ("argparse.py", "json/decoder.py", "email/message.py")
DEF_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)
DECLARED_RE = re.compile(r"([\w./-]+\.py)::([A-Za-z_][\w.]*)")


def vscode_capabilities() -> types.ClientCapabilities:
    """What VS Code announces for the features this benchmark touches (progress and lens refresh too)."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_folders=True,
            configuration=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(dynamic_registration=True),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True, relative_pattern_support=True
            ),
            execute_command=types.ExecuteCommandClientCapabilities(dynamic_registration=True),
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(
                dynamic_registration=True, will_save=True, will_save_wait_until=True, did_save=True
            ),
            hover=types.HoverClientCapabilities(
                dynamic_registration=True, content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]
            ),
            code_lens=types.CodeLensClientCapabilities(dynamic_registration=True),
            definition=types.DefinitionClientCapabilities(dynamic_registration=True, link_support=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=False, code_description_support=True, data_support=True
            ),
        ),
        window=types.WindowClientCapabilities(
            work_done_progress=True,
            show_message=types.ShowMessageRequestClientCapabilities(),
            show_document=types.ShowDocumentClientCapabilities(support=True),
        ),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    )


# -- corpus: files to open, positions to hover, queries --------------------------------------------------


class Target:
    """The documents a user has open and where they hover."""

    def __init__(self, ws: Path, files: list[Path]) -> None:
        self.ws = ws
        self.files = files
        self.hovers: list[tuple[str, int, int, str]] = []  # (uri, line0, char0, symbol)
        for f in files:
            text = f.read_text(encoding="utf-8")
            for m in DEF_RE.finditer(text):
                line0 = text.count("\n", 0, m.start(1))
                char0 = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1)
                self.hovers.append((f.as_uri(), line0, char0, m.group(1)))
        # interleave files so a short phase still hovers in every file
        by_file: dict[str, list[tuple[str, int, int, str]]] = {}
        for h in self.hovers:
            by_file.setdefault(h[0], []).append(h)
        lists = list(by_file.values())
        self.hovers = [lst[i] for i in range(max(map(len, lists), default=0)) for lst in lists if i < len(lst)]


def shop_target(ws: Path) -> Target:
    """The Python files the product graph declares (so today's server has something to say)."""
    seen: list[Path] = []
    for y in sorted((ws / ".lamina" / "workflows").glob("*.yaml")):
        for rel, _sym in DECLARED_RE.findall(y.read_text(encoding="utf-8")):
            p = ws / rel
            if p.is_file() and p not in seen:
                seen.append(p)
    return Target(ws, seen[:3])


def stdlib_target(ws: Path) -> Target:
    files = [ws / rel for rel in STDLIB_HOVER_FILES if (ws / rel).is_file()]
    if not files:  # another Python's layout: three mid-sized files, chosen deterministically
        all_py = sorted(ws.rglob("*.py"), key=lambda p: (p.stat().st_size, str(p)))
        files = [all_py[len(all_py) * k // 10] for k in (5, 6, 7)]
    return Target(ws, files)


def prepare_corpus(name: str, work: Path) -> tuple[Path, Target]:
    if name == "shop":
        ws = work / "shop" / "ws"
        if ws.exists():
            shutil.rmtree(ws)
        shutil.copytree(SHOP, ws, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
        return ws, shop_target(ws)
    ws = copy_stdlib(work / "stdlib" / "ws")
    return ws, stdlib_target(ws)


def count_files(ws: Path) -> int:
    return sum(1 for _d, _s, fs in os.walk(ws) for f in fs if not f.startswith(".lamina-bench"))


# -- /proc helpers (Linux): what the server leaves behind ------------------------------------------------


def child_pids(pid: int) -> list[int]:
    """Every descendant of pid (scan of /proc; empty elsewhere)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out: list[int] = []
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        frontier += kids
    return sorted(out)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


# -- one server session ------------------------------------------------------------------------------------


def plain_results() -> Converter:
    """pygls' converter, except that a custom method's result stays the dict JSON parsed it to.

    pygls' default turns each dict of such a result into a namedtuple of a class made for it: ~170 ms
    of the client's own time for one 100 KB `lamina/search` answer (topK 200) on a 2-core VM, paid
    before it reads the answers behind it. An editor's client (JSON.parse) takes ~1 ms, so with the
    default a request queued behind large answers measured the bench's parsing more than the server.
    """
    conv = default_converter()
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    return conv


class BenchClient(LanguageClient):
    """Counts messages from the server the client could not read (they would otherwise only be logged)."""

    protocol_errors: list[str]

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.protocol_errors.append(f"{type(error).__name__}: {error}"[:300])


class Sample:
    __slots__ = ("phase", "kind", "sent", "ms", "outcome")

    def __init__(self, phase: str, kind: str, sent: float) -> None:
        self.phase, self.kind, self.sent = phase, kind, sent
        self.ms: float | None = None
        self.outcome = ""  # ok | empty | error | timeout


class Session:
    """A `lamina serve` process, the client talking to it, and everything it sent us."""

    def __init__(
        self,
        ws: Path,
        target: Target,
        queries: list[str],
        *,
        cmd: list[str],
        cwd: Path,
        env: dict[str, str],
        index_dir: Path,
        rate: float,
        timeout: float,
    ) -> None:
        self.ws, self.target, self.queries = ws, target, queries
        self.cmd, self.cwd, self.env, self.index_dir = cmd, cwd, env, index_dir
        self.interval = 1.0 / rate
        self.timeout = timeout
        self.samples: list[Sample] = []
        self.outstanding: dict[int, Sample] = {}
        self.states: list[tuple[float, dict[str, Any]]] = []
        self.progress: list[tuple[float, dict[str, Any]]] = []
        self.messages: list[str] = []
        self.lens_refreshes = 0
        self.first_generation = asyncio.Event()
        self.stderr_tail = bytearray()
        self.t0 = time.perf_counter()
        self.counters = {k: 0 for k in KINDS}
        self.client: BenchClient | None = None
        self.init_result: Any = None

    def now(self) -> float:
        return time.perf_counter() - self.t0

    async def start(self) -> None:
        client = BenchClient("lamina-bench", "1", converter_factory=plain_results)
        client.protocol_errors = []
        self.client = client

        @client.feature("lamina/indexState")
        def on_state(ls: LanguageClient, params: Any) -> None:
            st = plain(params)
            st = st if isinstance(st, dict) else {}
            self.states.append((self.now(), st))
            if st.get("generation"):
                self.first_generation.set()

        @client.feature(types.PROGRESS)
        def on_progress(ls: LanguageClient, params: types.ProgressParams) -> None:
            v = plain(params.value)
            if not isinstance(v, dict):
                v = {k: getattr(params.value, k, None) for k in ("kind", "title", "percentage", "message")}
            self.progress.append((self.now(), {k: v.get(k) for k in ("kind", "title", "percentage", "message")}))

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_create(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def on_refresh(ls: LanguageClient, params: Any) -> None:
            self.lens_refreshes += 1
            return None

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def on_config(ls: LanguageClient, params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(ls: LanguageClient, params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

        @client.feature("lamina/packetChanged")
        def on_packet(ls: LanguageClient, params: Any) -> None:
            pass

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls: LanguageClient, params: types.LogMessageParams) -> None:
            pass

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diag(ls: LanguageClient, params: Any) -> None:
            pass

        await client.start_io(*self.cmd, env=self.env, cwd=str(self.cwd))
        proc = client._server
        assert proc is not None and proc.stderr is not None
        self.proc = proc
        asyncio.get_running_loop().create_task(self._drain_stderr(proc.stderr))
        folder = types.WorkspaceFolder(uri=self.ws.as_uri(), name=self.ws.name)
        self.init_result = await asyncio.wait_for(
            client.initialize_async(
                types.InitializeParams(
                    process_id=os.getpid(),
                    capabilities=vscode_capabilities(),
                    root_uri=self.ws.as_uri(),
                    workspace_folders=[folder],
                    initialization_options={"indexDir": str(self.index_dir)},
                    client_info=types.ClientInfo(name="lamina-bench (VS Code capabilities)", version="1"),
                )
            ),
            60,
        )
        client.initialized(types.InitializedParams())
        self.t_initialized = self.now()
        for f in self.target.files:  # the editor restores its open tabs right away
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=f.as_uri(), language_id="python", version=1, text=f.read_text(encoding="utf-8")
                    )
                )
            )

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        """Keep the pipe empty so a chatty server never blocks on stderr; keep the tail for errors."""
        while chunk := await stream.read(65536):
            self.stderr_tail += chunk
            del self.stderr_tail[:-8000]

    # -- requests ----------------------------------------------------------------------------------------
    def commands(self) -> list[str]:
        caps = getattr(self.init_result, "capabilities", None)
        prov = getattr(caps, "execute_command_provider", None)
        return list(getattr(prov, "commands", None) or [])

    def _request(self, kind: str) -> tuple[str, Any]:
        i = self.counters[kind]
        self.counters[kind] += 1
        doc = self.target.files[i % len(self.target.files)].as_uri()
        if kind == "hover":
            uri, line, char, _sym = self.target.hovers[i % len(self.target.hovers)]
            return types.TEXT_DOCUMENT_HOVER, types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=char)
            )
        if kind == "codeLens":
            return types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=doc)
            )
        if kind == "search":
            return "lamina/search", {"query": self.queries[i % len(self.queries)], "topK": 10}
        return UNKNOWN_METHOD, {}

    def fire(self, phase: str, kind: str) -> None:
        assert self.client is not None
        method, params = self._request(kind)
        s = Sample(phase, kind, self.now())
        sent = time.perf_counter()
        key = id(s)
        self.outstanding[key] = s

        def done(fut: Any) -> None:
            if s.outcome:  # already counted as a timeout
                return
            s.ms = (time.perf_counter() - sent) * 1000.0
            self.outstanding.pop(key, None)
            exc = None if fut.cancelled() else fut.exception()
            if fut.cancelled():
                s.outcome = "error"
            elif kind == "unknown":
                s.outcome = "ok" if exc is None or isinstance(exc, JsonRpcException) else "error"  # any answer
            elif exc is not None:
                s.outcome = "error"
            else:
                res = fut.result()
                res = plain(res)
                empty = res is None or res == [] or (isinstance(res, dict) and res.get("hits") == [])
                s.outcome = "empty" if empty else "ok"
            self.samples.append(s)

        self.client.protocol.send_request(method, params).add_done_callback(done)

    def expire(self) -> None:
        now = self.now()
        for key, s in list(self.outstanding.items()):
            if now - s.sent >= self.timeout:
                s.ms, s.outcome = (now - s.sent) * 1000.0, "timeout"
                self.outstanding.pop(key, None)
                self.samples.append(s)

    async def schedule(self, phase: str, max_s: float, stop: Callable[[], bool]) -> None:
        """Open loop: request i goes out at start + i/rate, answered or not."""
        start = time.perf_counter()
        i = 0
        while time.perf_counter() - start < max_s and not stop():
            self.fire(phase, KINDS[i % len(KINDS)])
            i += 1
            self.expire()
            await asyncio.sleep(max(0.0, start + i * self.interval - time.perf_counter()))

    async def drain(self) -> None:
        while self.outstanding:
            self.expire()
            await asyncio.sleep(0.05)

    async def call(self, method: str, params: Any, timeout: float) -> Any:
        assert self.client is not None
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)

    def last_state(self) -> dict[str, Any]:
        return self.states[-1][1] if self.states else {}


def resolve_method(s: Session, preferred: str, fallback: str) -> str:
    """`preferred` when the server advertises or answers it, else `fallback` (today's name)."""
    cmds = s.commands()
    if preferred.replace("lamina/", "lamina.") in cmds:
        return preferred
    if fallback.replace("lamina/", "lamina.") in cmds:
        return fallback
    return preferred


# -- one corpus ---------------------------------------------------------------------------------------------


def summarize(samples: Sequence[Sample], phase: str, kind: str) -> dict[str, Any]:
    got = [x for x in samples if x.phase == phase and x.kind == kind]
    ms = [x.ms or 0.0 for x in got]
    fails = sum(x.outcome in ("error", "timeout") for x in got)
    out: dict[str, Any] = {
        "n": len(got),
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "max_ms": round(max(ms, default=0.0), 1),
        "failures": fails,
        "timeouts": sum(x.outcome == "timeout" for x in got),
        "errors": sum(x.outcome == "error" for x in got),
        "empty": sum(x.outcome == "empty" for x in got),
    }
    target = TARGET_P95_MS.get(kind) if phase in ("build", "rebuild") else None
    if target is not None:
        out["target_p95_ms"] = target
        out["met"] = bool(got) and fails == 0 and out["p95_ms"] <= target
    return out


async def run_corpus(name: str, args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work_dir
    ws, target = prepare_corpus(name, work)
    base = work / name
    index_dir, cache = base / "index", base / "cache"
    for d in (index_dir, cache):  # a fresh index (the build phase is a first build) and a cold vector store
        if d.exists():
            shutil.rmtree(d)
    cache.mkdir(parents=True)
    env = dict(os.environ)
    env["LAMINA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(args.server_root) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("LAMINA_INDEX_DIR", None)
    if args.no_model:
        (base / "no-model").mkdir(exist_ok=True)
        env["LAMINA_MODEL_DIR"] = str(base / "no-model")
    queries = [q.text for q in make_queries(ws, 200, seed=0)]
    cmd = shlex.split(args.server_cmd)
    s = Session(
        ws,
        target,
        queries,
        cmd=cmd,
        cwd=args.server_root,
        env=env,
        index_dir=index_dir,
        rate=args.rate,
        timeout=args.timeout,
    )
    print(f"[{name}] {count_files(ws)} files in {ws}; starting {' '.join(cmd)}", flush=True)
    await s.start()
    result: dict[str, Any] = {
        "workspace": str(ws),
        "files": count_files(ws),
        "open_files": [str(f.relative_to(ws)) for f in target.files],
        "hover_positions": len(target.hovers),
        "queries": len(queries),
    }

    # 1. during the first full build: from `initialized` until the first generation exists
    await s.schedule("build", args.duration, s.first_generation.is_set)
    try:
        await asyncio.wait_for(s.first_generation.wait(), args.build_timeout)
    except TimeoutError:
        pass
    first_gen = next((t for t, st in s.states if st.get("generation")), None)
    result["first_generation_s"] = round(first_gen - s.t_initialized, 2) if first_gen is not None else None
    await s.drain()
    print(f"[{name}] first generation after {result['first_generation_s']} s", flush=True)

    # 2. idle: the index is complete (no sync in flight); embeddings may still be catching up
    deadline = time.perf_counter() + args.embed_wait
    while time.perf_counter() < deadline:
        st = s.last_state()
        if (
            st.get("generation")
            and st.get("freshness") != "syncing"
            and not st.get("embedding")
            and not st.get("pending")
        ):
            break
        await asyncio.sleep(0.2)
    result["idle_state"] = {
        k: s.last_state().get(k)
        for k in ("generation", "files", "chunks", "pending", "retrieval", "freshness", "embedding")
    }
    await s.schedule("idle", args.duration, lambda: False)
    await s.drain()

    # 3. during rebuilds, back to back for the phase's duration
    rebuild_method = resolve_method(s, "lamina/contextRebuild", "lamina/rebuild")
    rebuilds: list[float] = []
    rebuild_errors: list[str] = []

    async def rebuild_loop() -> None:
        nonlocal rebuild_method
        start = time.perf_counter()
        while time.perf_counter() - start < args.duration:
            t = time.perf_counter()
            try:
                await s.call(rebuild_method, {}, args.timeout)  # a lost answer costs one timeout, not the run
            except JsonRpcMethodNotFound:
                if rebuild_method == "lamina/rebuild":
                    raise
                rebuild_method = "lamina/rebuild"
                continue
            except (TimeoutError, JsonRpcException) as exc:
                rebuild_errors.append(f"{type(exc).__name__}: {exc}")
                break
            rebuilds.append(time.perf_counter() - t)

    task = asyncio.get_running_loop().create_task(rebuild_loop())
    await asyncio.sleep(0.02)  # the rebuild request goes out first
    await s.schedule("rebuild", args.duration * 4, task.done)
    await task
    await s.drain()
    result["rebuild"] = {
        "method": rebuild_method,
        "count": len(rebuilds),
        "seconds": [round(x, 2) for x in rebuilds],
        "errors": rebuild_errors,
    }
    print(f"[{name}] {len(rebuilds)} rebuild(s) via {rebuild_method}", flush=True)

    # 4. shutdown in the middle of a rebuild, then exit: how long, and what is left behind
    result["shutdown"] = await shutdown_mid_rebuild(s, rebuild_method, args)
    result["phases"] = {ph: {k: summarize(s.samples, ph, k) for k in KINDS} for ph in PHASES}
    result["progress"] = [{"t": round(t, 3), **v} for t, v in s.progress]
    result["states"] = [[round(t, 3), *(st.get(k) for k in STATE_KEYS)] for t, st in s.states]
    result["state_keys"] = ["t", *STATE_KEYS]
    result["lens_refreshes"] = s.lens_refreshes
    result["protocol_errors"] = s.client.protocol_errors if s.client is not None else []
    result["messages"] = s.messages
    result["samples"] = [[x.phase, x.kind, round(x.sent, 3), round(x.ms or 0.0, 1), x.outcome] for x in s.samples]
    if b"Traceback" in s.stderr_tail:
        result["stderr_tail"] = s.stderr_tail.decode(errors="replace")[-3000:]
    return result


async def shutdown_mid_rebuild(s: Session, rebuild_method: str, args: argparse.Namespace) -> dict[str, Any]:
    assert s.client is not None
    pid = s.proc.pid
    threads = thread_count(pid)
    children = child_pids(pid)
    n_progress = len(s.progress)
    t_rebuild = s.now()
    rebuild = s.client.protocol.send_request(rebuild_method, {})
    # wait until the rebuild is under way (its progress begins), at most 2 s
    while s.now() - t_rebuild < 2.0 and not any(
        v.get("kind") == "begin" and "embed" not in str(v.get("title")) for _t, v in s.progress[n_progress:]
    ):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    in_flight = not rebuild.done()
    out: dict[str, Any] = {
        "rebuild_in_flight": in_flight,
        "sent_after_rebuild_s": round(s.now() - t_rebuild, 3),
        "threads_before": threads,
        "children_before": children,
    }
    t = time.perf_counter()
    try:
        await asyncio.wait_for(s.client.shutdown_async(None), args.timeout)
        out["response_s"] = round(time.perf_counter() - t, 3)
    except (TimeoutError, Exception) as exc:  # a dead or hung server is a result, not a crash
        out["response_s"] = None
        out["response_error"] = f"{type(exc).__name__}: {exc}"
    t_exit = time.perf_counter()
    s.client.exit(None)
    try:
        await asyncio.wait_for(s.proc.wait(), 10)
        out["exited"] = True
        out["exit_code"] = s.proc.returncode
    except TimeoutError:
        out["exited"] = False
        out["threads_left"] = thread_count(pid)
        s.proc.kill()
        await s.proc.wait()
    end = time.perf_counter()
    out["exit_s"] = round(end - t_exit, 3)
    out["total_s"] = round(end - t, 3)
    out["children_left"] = [c for c in children if alive(c)]
    out["met"] = bool(out["exited"] and out["total_s"] <= TARGET_SHUTDOWN_S and not out["children_left"])
    try:
        await asyncio.wait_for(s.client.stop(), 5)
    except (TimeoutError, Exception):
        pass
    return out


# -- report ------------------------------------------------------------------------------------------------


def table(label: str, name: str, r: dict[str, Any]) -> str:
    rows = []
    for ph in PHASES:
        for k in KINDS:
            m = r["phases"][ph][k]
            tgt = f"<= {m['target_p95_ms']:.0f}" if "target_p95_ms" in m else ""
            met = ("yes" if m["met"] else "NO") if "met" in m else ""
            rows.append(
                [f"{ph} {k}", m["n"], m["p50_ms"], m["p95_ms"], m["max_ms"], m["failures"], m["empty"], tgt, met]
            )
    sd = r["shutdown"]
    head = (
        f"lamina serve latency [{label}] {name}: {r['files']} files; first generation after "
        f"{r['first_generation_s']} s; {r['rebuild']['count']} rebuild(s) via {r['rebuild']['method']}; "
        f"idle state {r['idle_state'].get('retrieval')}, pending {r['idle_state'].get('pending')}"
    )
    lines = [
        head,
        format_table(["phase request", "n", "p50 ms", "p95 ms", "max ms", "fail", "empty", "target p95", "met"], rows),
    ]
    resp = f"{sd['response_s']:.3f} s" if sd.get("response_s") is not None else f"none ({sd.get('response_error')})"
    lines.append(
        f"shutdown mid-rebuild (rebuild in flight: {sd['rebuild_in_flight']}): response {resp}, "
        f"exit {sd['exit_s']:.3f} s, total {sd['total_s']:.3f} s (target <= {TARGET_SHUTDOWN_S:.0f} s: "
        f"{'yes' if sd['met'] else 'NO'}); exited {sd['exited']} code {sd.get('exit_code')}, "
        f"threads before {sd['threads_before']}, children left {sd['children_left']}"
    )
    if r.get("protocol_errors"):
        lines.append(
            f"{len(r['protocol_errors'])} server message(s) the client could not read: {r['protocol_errors'][0]}"
        )
    return "\n".join(lines)


def comparison(runs: dict[str, Any]) -> str | None:
    """p95 per phase and request for every stored label, with the ratio of the last to the first."""
    labels = [lb for lb in ("before", "after") if lb in runs] + sorted(set(runs) - {"before", "after"})
    if len(labels) < 2:
        return None
    out = []
    corpora = sorted({c for lb in labels for c in runs[lb]["corpora"]})
    for c in corpora:
        rows = []
        for ph in PHASES:
            for k in KINDS:
                vals = [
                    runs[lb]["corpora"].get(c, {}).get("phases", {}).get(ph, {}).get(k, {}).get("p95_ms")
                    for lb in labels
                ]
                ratio = f"{vals[-1] / vals[0]:.3f}" if vals[0] and vals[-1] is not None else ""
                rows.append([f"{ph} {k}", *["" if v is None else v for v in vals], ratio])
        sd = [runs[lb]["corpora"].get(c, {}).get("shutdown", {}).get("total_s") for lb in labels]
        rows.append(
            [
                "shutdown total s",
                *["" if v is None else v for v in sd],
                f"{sd[-1] / sd[0]:.3f}" if sd[0] and sd[-1] is not None else "",
            ]
        )
        out.append(f"p95 ms side by side, {c}")
        out.append(format_table(["phase request", *labels, f"{labels[-1]}/{labels[0]}"], rows))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.lsp_latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=("shop", "stdlib", "both"), default="both")
    ap.add_argument(
        "--duration",
        type=float,
        default=15.0,
        help="seconds per phase (the build phase ends earlier when the first generation appears)",
    )
    ap.add_argument(
        "--rate",
        type=float,
        default=20.0,
        help="requests per second, cycling hover, codeLens, search and an unknown method",
    )
    ap.add_argument("--timeout", type=float, default=60.0, help="a request unanswered this long is a failure")
    ap.add_argument("--build-timeout", type=float, default=600.0)
    ap.add_argument(
        "--embed-wait",
        type=float,
        default=25.0,
        help="before the idle phase, wait at most this long for background embedding to finish",
    )
    ap.add_argument("--label", default="before", help="the run's name in the JSON (before, after, ...)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-lsp-bench"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "lsp_latency.json")
    ap.add_argument("--server-cmd", default=f"{shlex.quote(sys.executable)} -m lsp_server.cli serve")
    ap.add_argument(
        "--server-root",
        type=Path,
        default=ROOT,
        help="the server's cwd and PYTHONPATH (another checkout to measure it)",
    )
    ap.add_argument(
        "--no-model",
        action="store_true",
        help="point LAMINA_MODEL_DIR at an empty folder: lexical only, no background embedding",
    )
    args = ap.parse_args(argv)
    args.work_dir = args.work_dir.resolve()
    args.server_root = args.server_root.resolve()
    corpora = ("shop", "stdlib") if args.corpus == "both" else (args.corpus,)
    t0 = time.perf_counter()
    run: dict[str, Any] = {
        "meta": {
            "label": args.label,
            "server_cmd": args.server_cmd,
            "server_root": str(args.server_root),
            "server_revision": engine_revision() if args.server_root == ROOT else "",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "rate": args.rate,
            "duration_s": args.duration,
            "timeout_s": args.timeout,
            "model": not args.no_model,
            # unbuffered stdio lets the server's threads interleave large messages on the pipe
            "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED", ""),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "corpora": {},
    }
    for name in corpora:
        run["corpora"][name] = asyncio.run(run_corpus(name, args))
        print(table(args.label, name, run["corpora"][name]), flush=True)
    run["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
    stored: dict[str, Any] = {}
    if args.out.exists():
        try:
            stored = json.loads(args.out.read_text())
        except (OSError, ValueError):
            stored = {}
    if stored.get("schema") != SCHEMA:
        stored = {"schema": SCHEMA, "runs": {}}
    stored["runs"][args.label] = run
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(stored, indent=1) + "\n")
    cmp = comparison(stored["runs"])
    if cmp:
        print(cmp)
    print(f"wrote {args.out} (label {args.label}); {run['meta']['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
