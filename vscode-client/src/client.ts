/**
 * The language server's lifecycle: pick the Python, check Lamina imports there, start
 * `lamina serve` over stdio with one client for all workspace folders, restart (debounced) when
 * the interpreter or a restart-only setting changes, and turn every failure into one notice.
 */
import * as vscode from 'vscode';
import { execFile } from 'child_process';
import * as fs from 'fs';
import {
  LanguageClient, State, CloseAction, ErrorAction, TransportKind,
  type LanguageClientOptions, type ServerOptions, type ProgressToken,
  type WorkDoneProgressBegin, type WorkDoneProgressReport, type WorkDoneProgressEnd,
} from 'vscode-languageclient/node';
import { choosePython, checkImportable, describeChoice, setupCheckout, SERVE_ARGS, type PythonChoice, type Runner } from './logic/python';
import { crashNotice, noticeFromServerMessage, noticeFromStartFailure, type Notice } from './logic/serverMessages';
import { LibraryRestarts } from './logic/lifecycle';
import { initializationOptions, readSettings, runtimeSettings, type LaminaSettings } from './logic/settings';
import { debounce } from './logic/debounce';
import { ProgressBoard, type Progress, type ServerPhase } from './logic/status';
import type { IndexState, PacketChanged } from './protocol';
import { Notifications } from './protocol';

export interface ServerEvents {
  /** `problem`: why it is not running and what to do (a start failure, a crash), for 'failed' and 'stopped'. */
  phase(p: ServerPhase, problem?: Notice): void;
  progress(p: Progress | undefined): void;
  indexState(s: IndexState): void;
  packetChanged(n: PacketChanged): void;
  notify(n: Notice): Promise<void>;
  log(line: string): void;
}

const runner: Runner = (command, args, timeoutMs) => new Promise((resolve) => {
  execFile(command, args, { timeout: timeoutMs, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, env: process.env },
    (error, stdout, stderr) => {
      const e = error as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (e && typeof e.code === 'string') resolve({ code: null, stdout: String(stdout), stderr: String(stderr), error: `${e.code}: ${e.message}` });
      else resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
});

export class ServerManager implements vscode.Disposable {
  client: LanguageClient | undefined;
  python: PythonChoice = { command: 'python3', source: 'path' };
  private restarts: number[] = [];
  private stopping = false;
  /** The current client's crash/restart tracker (it must learn the failures the manager reports itself). */
  private lifecycle: LibraryRestarts | undefined;
  /** What the last unexpected exit was told (the crash notice while the library restarts it). */
  private lastClose: Notice | undefined;
  private readonly builds = new ProgressBoard();
  private readonly disposables: vscode.Disposable[] = [];
  readonly restart = debounce(() => { void this.doRestart(); }, 600);

  constructor(private readonly output: vscode.LogOutputChannel, private readonly ev: ServerEvents, private readonly extensionDir = '') {}

  settings(): LaminaSettings {
    const c = vscode.workspace.getConfiguration('lamina');
    return readSettings((k) => c.get(k));
  }

  async interpreterFromPythonExtension(): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) return undefined;
    try {
      const api = (ext.isActive ? ext.exports : await ext.activate()) as PythonApi | undefined;
      const env = api?.environments?.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
      return env?.path;
    } catch (err) {
      this.ev.log(`the Python extension did not give an interpreter: ${String(err)}`);
      return undefined;
    }
  }

  /** Restart when the Python extension's active interpreter changes. */
  async watchPythonExtension(): Promise<void> {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) return;
    try {
      const api = (ext.isActive ? ext.exports : await ext.activate()) as PythonApi | undefined;
      const ev = api?.environments?.onDidChangeActiveEnvironmentPath;
      if (ev) this.disposables.push(ev(() => { if (!this.settings().python) { this.ev.log('the active Python interpreter changed: restarting'); this.restart(); } }));
    } catch { /* no API: nothing to watch */ }
  }

  private starting: Promise<void> | undefined;

  /** Starts the server; requests made meanwhile wait for it instead of failing. */
  start(): Promise<void> {
    const p = this.doStart().finally(() => { if (this.starting === p) this.starting = undefined; });
    this.starting = p;
    return p;
  }

  private async doStart(): Promise<void> {
    this.lifecycle = undefined;
    this.ev.phase('starting');
    const s = this.settings();
    this.python = choosePython(s.python, s.python ? undefined : await this.interpreterFromPythonExtension());
    this.ev.log(`Python: ${describeChoice(this.python)}`);
    const check = await checkImportable(this.python, runner);
    if (!check.ok) {
      this.ev.log(check.detail);
      const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
      const setupDir = setupCheckout(this.python.command, folders, this.extensionDir, (p) => fs.existsSync(p));
      this.fail(noticeFromStartFailure(check.reason, check.detail, { setupDir }));
      return;
    }
    this.ev.log(`Lamina found at ${check.location}`);
    const serverOptions: ServerOptions = {
      command: this.python.command, args: SERVE_ARGS, transport: TransportKind.stdio,
      options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, env: { ...process.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
      initializationOptions: initializationOptions(s),
      errorHandler: {
        error: (_e, _m, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        closed: () => this.onClosed(),
      },
      initializationFailedHandler: (err) => {
        this.ev.log(`initialize failed: ${String(err?.message ?? err)}`);
        this.fail(noticeFromStartFailure('failed', String(err?.message ?? err)));
        return false;
      },
      middleware: {
        handleWorkDoneProgress: (token, params, next) => { this.onProgress(token, params); next(token, params); },
      },
    };
    const client = new LanguageClient('lamina', 'Lamina', serverOptions, clientOptions);
    this.client = client;
    ownLaminaCommands(client, (line) => this.ev.log(line));
    // Registered before start: they replace the library's plain showMessage toast once initialized.
    client.onNotification('window/showMessage', (m: { type: number; message: string }) => this.onShowMessage(m));
    client.onNotification(Notifications.indexState, (s: IndexState) => this.ev.indexState(s));
    client.onNotification(Notifications.packetChanged, (n: PacketChanged) => this.ev.packetChanged(n));
    // a crashed server restarted by the client library: report its phases (status bar, panel, the task
    // set again), and that nothing runs while it is down or when its restart fails
    const restarts = new LibraryRestarts();
    this.lifecycle = restarts;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      const phase = restarts.change(e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting'
        : e.newState === State.StartFailed ? 'startFailed' : 'stopped');
      if (!phase) return;
      if (phase !== 'running') { this.builds.clear(); this.ev.progress(undefined); }
      if (phase === 'failed') {
        this.ev.log('the restarted server did not start');
        this.fail(noticeFromStartFailure('crashed', 'it did not start again; the Lamina output has the details'));
        return;
      }
      this.ev.log(phase === 'running' ? 'the restarted server runs' : phase === 'starting' ? 'the server is starting again' : 'the server stopped');
      this.ev.phase(phase, phase === 'stopped' ? this.lastClose : undefined);
    });
    try {
      await client.start();
      this.ev.phase('running');
      this.ev.log(`server started: ${JSON.stringify(client.initializeResult?.serverInfo ?? {})}`);
    } catch (err) {
      if (this.client === client) {
        this.ev.log(`server start failed: ${String((err as Error)?.stack ?? err)}`);
        this.fail(noticeFromStartFailure('failed', String((err as Error)?.message ?? err)));
      }
    }
  }

  private fail(n: Notice): void {
    this.lifecycle?.markFailed();
    this.ev.phase('failed', n);
    void this.ev.notify(n);  // the controller's gate: one notice per problem per start
  }

  private onShowMessage(m: { type: number; message: string }): void {
    this.ev.log(`server says: ${m.message}`);
    const n = noticeFromServerMessage(m.type, m.message);
    void this.ev.notify(n);  // the controller's gate: one notice per problem per start
  }

  private onClosed(): { action: CloseAction; handled: boolean } {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < 180_000);
    if (this.restarts.length < 3) {
      this.restarts.push(now);
      this.ev.log('the server stopped: restarting it');
      this.lastClose = crashNotice(this.restarts.length, 3);
      void this.ev.notify(this.lastClose);
      return { action: CloseAction.Restart, handled: true };
    }
    this.fail(noticeFromStartFailure('crashed', 'it stopped 3 times within 3 minutes; see the Lamina output.'));
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private onProgress(token: ProgressToken, p: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd): void {
    const key = String(token);
    this.ev.progress(p.kind === 'begin' ? this.builds.begin(key, p.title, p.message, p.percentage)
      : p.kind === 'report' ? this.builds.report(key, p.message, p.percentage)
        : this.builds.end(key));
  }

  async request<T>(method: string, params: unknown): Promise<T> {
    if (this.starting) await this.starting;
    // the library restarting a crashed server: wait for it like for the manager's own start
    if (this.client?.state === State.Starting) await this.client.start().catch(() => undefined);
    const c = this.client;
    if (!c || c.state !== State.Running) throw new Error('the Lamina server is not running');
    return c.sendRequest<T>(method, params);
  }

  /** budget / mode / topK / rankedLenses change without a restart (docs/lsp.md). */
  async pushRuntimeSettings(): Promise<void> {
    const c = this.client;
    if (c?.state === State.Running) await c.sendNotification('workspace/didChangeConfiguration', { settings: runtimeSettings(this.settings()) });
  }

  private async doRestart(): Promise<void> {
    this.ev.log('restarting the Lamina server');
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.ev.progress(undefined);
    this.builds.clear();
    if (!c) return;
    this.stopping = true;
    try { if (c.state !== State.Stopped) await c.stop(5000); } catch (err) { this.ev.log(`stop: ${String(err)}`); } finally { this.stopping = false; }
    this.ev.phase('stopped');
  }

  dispose(): void { this.restart.cancel(); for (const d of this.disposables) d.dispose(); void this.stop(); }
}

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string; id?: string } | undefined;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

/**
 * The extension registers every `lamina.*` command itself (and asks the server not to advertise
 * them: `executeCommands: false`). A server that advertises them anyway would make the library's
 * executeCommand feature register the same ids twice, which VS Code refuses: skip those.
 */
function ownLaminaCommands(client: LanguageClient, log: (line: string) => void): void {
  const feature = client.getFeature('workspace/executeCommand') as unknown as {
    register(data: { id: string; registerOptions: { commands?: string[] } }): void;
  };
  const register = feature.register.bind(feature);
  feature.register = (data) => {
    const all = data.registerOptions.commands ?? [];
    const commands = all.filter((c) => !c.startsWith('lamina.'));
    if (commands.length !== all.length) log(`server advertises ${all.length - commands.length} lamina.* commands through executeCommand: the extension's own commands handle them`);
    register({ ...data, registerOptions: { ...data.registerOptions, commands } });
  };
}
