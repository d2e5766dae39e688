/** Activation: the server manager, the controller, the panel, the packet documents, the status bar and every `lamina.*` command. */
import * as vscode from 'vscode';
import { Controller } from './controller';
import { VsCodeHost } from './host';
import { ServerManager } from './client';
import { PanelView, PANEL_VIEW_ID } from './panelView';
import { PacketDocuments, PACKET_SCHEME } from './packetDocs';
import { statusView, type Progress } from './logic/status';
import { RESTART_KEYS, RUNTIME_KEYS } from './logic/settings';
import { debounce } from './logic/debounce';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Lamina', { log: true });
  const status = vscode.window.createStatusBarItem('lamina.status', vscode.StatusBarAlignment.Left, 10);
  status.name = 'Lamina';
  status.show();
  let progress: Progress | undefined;
  let failure: string | undefined;

  // eslint-disable-next-line prefer-const
  let controller: Controller;
  const docs = new PacketDocuments((folder) => controller.packetMarkdown(folder));
  const mgr: ServerManager = new ServerManager(output, {
    phase: (p, problem) => {
      failure = problem?.text; controller.setServerPhase(p, problem ?? null); renderStatus();
      if (p === 'running') void controller.checkGraphs();
    },
    progress: (p) => { progress = p; renderStatus(); },
    indexState: (s) => { controller.onIndexState(s); renderStatus(); },
    packetChanged: (n) => { void controller.onPacketChanged(n); },
    notify: (n): Promise<void> => controller.notice(n),  // one gate for the server's messages and the client's own
    log: (line) => host.log(line),
  }, context.extensionUri.fsPath);
  manager = mgr;
  const host: VsCodeHost = new VsCodeHost({
    output, extensionUri: context.extensionUri, python: (): string => mgr.python.command, packetView: () => mgr.settings().packetView, restartServer: () => mgr.restart(),
    panelViewId: PANEL_VIEW_ID, packetDocs: docs,
  });
  controller = new Controller(host, { request: (m, p) => mgr.request(m, p) });
  const panel = new PanelView(context.extensionUri, (m) => { void controller.onPanelMessage(m); });
  controller.attachPanel(panel);

  function renderStatus(): void {
    const v = statusView(controller.serverPhase, controller.store.indexStates(), progress, failure, vscode.workspace.workspaceFolders?.length ?? 0);
    status.text = v.text;
    status.tooltip = v.tooltip;
    status.command = v.command;
    status.backgroundColor = v.severity === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : v.severity === 'warning' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }
  renderStatus();

  const reg = (id: string, fn: (...args: never[]) => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown));
  };
  // the commands about a folder's index: in an empty window one message that says to open a folder
  const regFolder = (id: string, fn: (...args: never[]) => unknown): void =>
    reg(id, (...args: never[]) => controller.withFolder(async () => { await fn(...args); }));
  regFolder('lamina.setTask', (task?: string) => controller.setTask(typeof task === 'string' ? task : undefined));
  regFolder('lamina.clearTask', () => controller.clearTask());
  regFolder('lamina.preparePacket', () => controller.preparePacket());
  regFolder('lamina.selectWorkflow', () => controller.selectWorkflow());
  regFolder('lamina.goToRelevantWorkflow', () => controller.goToRelevantWorkflow());
  regFolder('lamina.showPacket', () => controller.showPacket());
  regFolder('lamina.copyPacket', () => controller.copyPacket());
  regFolder('lamina.search', (q?: string) => controller.search(typeof q === 'string' ? q : undefined));
  regFolder('lamina.contextStatus', () => controller.contextStatus());
  regFolder('lamina.rebuildContext', () => controller.rebuild());
  reg('lamina.revealSpan', (arg?: { id: string; folder?: string }) => controller.revealSpan(arg));
  reg('lamina.showWorkflow', (arg?: { workflow: string; operation?: string; folder?: string } | string) => controller.showWorkflow(arg));
  reg('lamina.restartServer', () => mgr.restart());
  reg('lamina.showOutput', () => output.show(true));

  const pushRuntime = debounce(() => { void mgr.pushRuntimeSettings(); }, 300);
  // The repository's `.lamina/config.toml` needs nothing here: the server follows its edits
  // itself, reopening only that folder with the task kept (docs/lsp.md).
  context.subscriptions.push(
    output, status, mgr, docs,
    vscode.window.registerWebviewViewProvider(PANEL_VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(PACKET_SCHEME, docs),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(`lamina.${k}`))) { host.log('a restart-only setting changed: restarting'); mgr.restart(); }
      else if (RUNTIME_KEYS.some((k) => e.affectsConfiguration(`lamina.${k}`))) pushRuntime();
    }),
    vscode.window.onDidChangeActiveTextEditor(() => controller.refreshPanel()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => { renderStatus(); controller.refreshPanel(); }),
  );
  void mgr.watchPythonExtension();
  void mgr.start();  // activation does not wait for the server; requests do
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
}
