"""A real `lamina serve` over stdio and a pygls LanguageClient on its own event-loop thread.

Shared by the per-feature language-server tests. Everything the server sends
(state, packets, progress, diagnostics, lens refreshes, messages) is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from lsp_server.params import plain
from tests.conftest import ROOT, git

SHOP = ROOT / "examples" / "shop"


def wait_for(pred: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def server_env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["LAMINA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("LAMINA_INDEX_DIR", None)
    env.update(extra)
    return env


def frame(obj: Any, *headers: str) -> bytes:
    """One JSON-RPC message as it travels on stdio, with any extra header lines."""
    body = json.dumps(obj).encode()
    head = "".join(f"{h}\r\n" for h in (f"Content-Length: {len(body)}", *headers))
    return f"{head}\r\n".encode() + body


class RawServer:
    """`lamina serve` with bare pipes, for what a LanguageClient cannot send (a cut stream, a
    message that is not JSON); everything it writes is kept in `out` and `err`."""

    def __init__(self, index_dir: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server.cli", "serve", "--index-dir", str(index_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        self.out = bytearray()
        self.err = bytearray()
        for src, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._drain, args=(src, into), daemon=True).start()

    @staticmethod
    def _drain(src: Any, into: bytearray) -> None:
        while chunk := src.read1(4096):
            into.extend(chunk)

    def send(self, *raw: bytes) -> None:
        assert self.proc.stdin is not None
        for r in raw:
            self.proc.stdin.write(r)
        self.proc.stdin.flush()

    def initialize(self, ws: Path) -> bytes:
        params = {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}}
        return frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()


def copy_shop(dest: Path) -> Path:
    """examples/shop as a fresh git repository (the graph is the files the repository tracks)."""
    shutil.copytree(SHOP, dest, ignore=shutil.ignore_patterns("__pycache__", ".lamina-cache"))
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "shop")
    return dest


def vscode_capabilities(work_done_progress: bool = True) -> types.ClientCapabilities:
    """What VS Code announces for the features Lamina uses."""
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=work_done_progress),
        workspace=types.WorkspaceClientCapabilities(
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
            workspace_folders=True,
            configuration=True,
        ),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            code_lens=types.CodeLensClientCapabilities(),
            definition=types.DefinitionClientCapabilities(),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(),
        ),
    )


class Session:
    """One server process and a pygls LanguageClient on a private event-loop thread."""

    def __init__(
        self,
        folders: Path | list[Path],
        index_dir: Path | None,
        env: dict[str, str],
        *,
        options: dict[str, Any] | None = None,
        work_done_progress: bool = True,
        module: bool = False,
    ) -> None:
        self.folders = folders if isinstance(folders, list) else [folders]
        self.workspace = self.folders[0]
        self.states: list[dict[str, Any]] = []
        self.packets: list[dict[str, Any]] = []
        self.messages: list[tuple[int, str]] = []
        self.progress: list[dict[str, Any]] = []
        self.progress_tokens: list[str] = []
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.lens_refreshes = 0
        self.log: list[str] = []
        self.stderr: list[str] = []  # the server's stderr lines, read as they come
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client: LanguageClient = self.run(self._start(index_dir, env, options, work_done_progress, module), 30)

    def run(self, make: Any, timeout: float = 20) -> Any:
        """Await `make()` (or a coroutine) on the client's loop: its futures belong to that loop."""

        async def wrap() -> Any:
            return await (make() if callable(make) else make)

        return asyncio.run_coroutine_threadsafe(wrap(), self.loop).result(timeout)

    async def _start(
        self, index_dir: Path | None, env: dict[str, str], options: dict[str, Any] | None, wdp: bool, module: bool
    ) -> LanguageClient:
        client = LanguageClient("lamina-tests", "v1")

        @client.feature("lamina/indexState")
        def on_state(ls: LanguageClient, params: Any) -> None:
            self.states.append(plain(params))

        @client.feature("lamina/packetChanged")
        def on_packet(ls: LanguageClient, params: Any) -> None:
            self.packets.append(plain(params))

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(ls: LanguageClient, params: types.ShowMessageParams) -> None:
            self.messages.append((int(params.type), params.message))

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls: LanguageClient, params: types.LogMessageParams) -> None:
            self.log.append(params.message)

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_create(ls: LanguageClient, params: types.WorkDoneProgressCreateParams) -> None:
            self.progress_tokens.append(str(params.token))

        @client.feature(types.PROGRESS)
        def on_progress(ls: LanguageClient, params: types.ProgressParams) -> None:
            value = params.value if isinstance(params.value, dict) else plain(params.value)
            self.progress.append({"token": str(params.token), **value})

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def on_refresh(ls: LanguageClient, params: None) -> None:
            self.lens_refreshes += 1

        args = ["-m", "lsp_server"] if module else ["-m", "lsp_server.cli", "serve"]
        if index_dir is not None:
            args += ["--index-dir", str(index_dir)]
        await client.start_io(sys.executable, *args, env=env, cwd=str(ROOT))
        self._stderr_task = asyncio.ensure_future(self._drain_stderr(client))
        await client.initialize_async(
            types.InitializeParams(
                capabilities=vscode_capabilities(wdp),
                root_uri=self.workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in self.folders],
                initialization_options=options or {},
            )
        )
        client.initialized(types.InitializedParams())
        return client

    async def _drain_stderr(self, client: LanguageClient) -> None:
        """Read the server's stderr as an editor does: a pipe nobody reads fills (~200 KB with
        asyncio's buffer) and then blocks the server's next log line, and the whole server with it."""
        stream = client._server.stderr  # type: ignore[union-attr]
        while line := await stream.readline():
            self.stderr.append(line.decode(errors="replace"))

    # -- requests -----------------------------------------------------------------------------
    def request(self, method: str, params: Any = None, timeout: float = 20) -> dict[str, Any]:
        return plain(self.run(lambda: self.client.protocol.send_request_async(method, params or {}), timeout))

    def request_later(self, method: str, params: Any = None) -> Any:
        """Send a request without waiting: a concurrent Future of its result."""

        async def send() -> Any:
            return plain(await self.client.protocol.send_request_async(method, params or {}))

        return asyncio.run_coroutine_threadsafe(send(), self.loop)

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """The `data` of the JSON-RPC error a request must fail with."""
        try:
            self.request(method, params)
        except JsonRpcException as exc:
            return plain(exc.data) if exc.data is not None else {"message": str(exc)}
        raise AssertionError(f"{method} {params!r} did not fail")

    def notify(self, method: str, params: Any) -> None:
        self.loop.call_soon_threadsafe(self.client.protocol.notify, method, params)

    def change_folders(self, added: list[Path], removed: list[Path]) -> None:
        """`workspace/didChangeWorkspaceFolders`: the client adds and removes folders (named as their directory)."""

        def folders(paths: list[Path]) -> list[types.WorkspaceFolder]:
            return [types.WorkspaceFolder(uri=p.as_uri(), name=p.name) for p in paths]

        self.notify(
            types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(added=folders(added), removed=folders(removed))
            ),
        )

    def search(self, query: str, **kw: Any) -> dict[str, Any]:
        return self.request("lamina/search", {"query": query, **kw})

    def lenses(self, path: Path) -> list[tuple[int, str, Any]]:
        got = self.run(
            lambda: self.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
            )
        )
        return [(lens.range.start.line, lens.command.title, plain(lens.command.arguments)) for lens in got or []]

    def hover(self, path: Path, line0: int, character: int = 4) -> str | None:
        got = self.run(
            lambda: self.client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    position=types.Position(line=line0, character=character),
                )
            )
        )
        return got.contents.value if got is not None else None

    def definition(self, path: Path, line0: int, character: int) -> list[types.Location]:
        got = self.run(
            lambda: self.client.text_document_definition_async(
                types.DefinitionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    position=types.Position(line=line0, character=character),
                )
            )
        )
        return list(got or [])

    def open(self, path: Path, text: str | None = None, version: int = 1) -> None:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(),
                    language_id="python",
                    version=version,
                    text=path.read_text(encoding="utf-8") if text is None else text,
                )
            )
        )

    def replace_buffer(self, path: Path, text: str, version: int) -> None:
        """An unsaved edit: the whole buffer replaced (a full-text content change)."""
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def close_document(self, path: Path) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
        )

    def wait_generation(self, timeout: float = 60, folder: Path | None = None) -> dict[str, Any]:
        uri = (folder or self.workspace).resolve().as_uri()
        return wait_for(
            lambda: next((s for s in reversed(self.states) if s["generation"] and s.get("folder") == uri), None),
            timeout,
            f"the first generation of {uri}",
        )

    def close(self, timeout: float = 15) -> int | None:
        """shutdown + exit; the server's exit code (None if it did not exit in time)."""

        async def stop() -> int | None:
            await self.client.shutdown_async(None)
            self.client.exit(None)
            proc = self.client._server
            try:
                await asyncio.wait_for(proc.wait(), timeout)  # type: ignore[union-attr]
            except TimeoutError:
                proc.kill()  # type: ignore[union-attr]
                return None
            await asyncio.wait_for(self._stderr_task, 5)
            err = "".join(self.stderr)
            assert "LAMINA_EXIT_STALLED" not in err, err  # the watchdog ended a hung exit: its stacks say where
            await self.client.stop()
            return proc.returncode  # type: ignore[union-attr]

        try:
            return self.run(stop(), timeout + 15)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    @property
    def pid(self) -> int:
        return self.client._server.pid  # type: ignore[union-attr]


def lexical_session(tmp_path: Path, ws: Path, **options: Any) -> Session:
    """A server on `ws` without the model (a build takes a fraction of a second), its first
    generation built and its state settled."""
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "no-model"))
    s = Session(ws, tmp_path / "index", env, options=options or None, work_done_progress=False)
    s.wait_generation(30)
    wait_for(lambda: s.states[-1]["freshness"] == "fresh", 30, "the first build to settle")
    return s
