/**
 * The one module that turns the controller's `Host` into VS Code API calls (the thin wrapper the
 * unit tests replace). Also runs a notification's action (terminal, settings, YAML at a line).
 */
import * as vscode from 'vscode';
import * as fs from 'fs';
import * as path from 'path';
import type { Host, Location, PickItem } from './controller';
import type { Notice, Action } from './logic/serverMessages';
import { PACKET_SCHEME, packetUri, markdownUri, previewTabNames, previewTabs } from './packetDocs';
import { PREVIEW_KEEPALIVE_MS, keepaliveTick } from './logic/previewKeepalive';

export interface HostDeps {
  output: vscode.LogOutputChannel;
  extensionUri: vscode.Uri;
  python: () => string;
  /** `lamina.packetView`: Show Packet opens the rendered preview (default) or the markdown source. */
  packetView: () => 'preview' | 'source';
  restartServer: () => void;
  panelViewId: string;
  packetDocs: { changed(uri: vscode.Uri): void; put(uri: vscode.Uri, text: string): void };
}

export class VsCodeHost implements Host {
  /** Packet documents shown as a preview, kept open while their preview tab is (keepPreviewed). */
  private readonly previewed = new Set<string>();
  private keepalive: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly d: HostDeps) {}

  showInputBox(o: { prompt: string; value?: string; placeHolder?: string }): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showInputBox({ prompt: o.prompt, value: o.value, placeHolder: o.placeHolder, ignoreFocusOut: true }));
  }

  showQuickPick<T extends PickItem>(items: T[], o: { placeHolder: string; matchOnDetail?: boolean }): Promise<T | undefined> {
    return Promise.resolve(vscode.window.showQuickPick(items, { placeHolder: o.placeHolder, matchOnDescription: true, matchOnDetail: o.matchOnDetail }));
  }

  async notify(n: Notice): Promise<void> {
    this.log(`[${n.severity}] ${n.text}`);
    const show = n.severity === 'error' ? vscode.window.showErrorMessage : n.severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const picked = await show(n.text, ...n.actions.map((a) => a.title));
    const action = n.actions.find((a) => a.title === picked);
    if (action) await this.runAction(action, n);
  }

  async runAction(a: Action, n: Notice): Promise<void> {
    switch (a.kind) {
      case 'setupInstructions': {
        // vsce stores the README as readme.md inside the .vsix; a development checkout has README.md
        const names = ['readme.md', 'README.md'];
        const found = names.map((n) => vscode.Uri.joinPath(this.d.extensionUri, n)).find((u) => fs.existsSync(u.fsPath));
        const uri = found ?? vscode.Uri.joinPath(this.d.extensionUri, 'README.md');
        await vscode.commands.executeCommand('markdown.showPreview', uri);
        return;
      }
      case 'reinstallModel': this.terminal('Lamina: reinstall model', `${quote(this.d.python())} -m assets.install`); return;
      case 'runSetup': {
        // only offered with a Lamina checkout to run it in (noticeFromStartFailure's setupDir)
        if (n.dir) this.terminal('Lamina: setup', 'bash scripts/setup.sh', n.dir);
        return;
      }
      case 'openYaml': {
        if (!n.file) return;
        await this.openLocation({ folder: this.folderContaining(n.file), file: n.file, startLine: n.line ?? 1, endLine: n.line ?? 1 });
        return;
      }
      case 'showProblems': await vscode.commands.executeCommand('workbench.actions.view.problems'); return;
      case 'contextStatus': await vscode.commands.executeCommand('lamina.contextStatus'); return;
      case 'restartServer': this.d.restartServer(); return;
      case 'choosePython': await vscode.commands.executeCommand('workbench.action.openSettings', 'lamina.python'); return;
      case 'showOutput': this.d.output.show(true); return;
    }
  }

  private terminal(name: string, cmd: string, cwd?: string): void {
    const t = vscode.window.createTerminal({ name, cwd });
    t.show();
    t.sendText(cmd, true);
  }

  private folderContaining(file: string): string | undefined {
    const folders = vscode.workspace.workspaceFolders ?? [];
    for (const f of folders) {
      if (fs.existsSync(vscode.Uri.joinPath(f.uri, file).fsPath)) return f.uri.toString();
    }
    return folders[0]?.uri.toString();
  }

  info(text: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showInformationMessage(text, ...actions));
  }

  async openLocation(loc: Location, o?: { preserveFocus?: boolean }): Promise<void> {
    let uri: vscode.Uri | undefined;
    let range: vscode.Range | undefined;
    if (loc.uri) {
      uri = vscode.Uri.parse(loc.uri);
      if (loc.range) range = new vscode.Range(loc.range.start.line, loc.range.start.character, loc.range.end.line, loc.range.end.character);
    } else if (loc.file) {
      const base = loc.folder ? vscode.Uri.parse(loc.folder) : vscode.workspace.workspaceFolders?.[0]?.uri;
      uri = loc.file.startsWith('/') || !base ? vscode.Uri.file(loc.file) : vscode.Uri.joinPath(base, loc.file);
    }
    if (!uri) return;
    if (!range && loc.startLine) {
      const s = Math.max(0, loc.startLine - 1);
      const e = Math.max(s, (loc.endLine ?? loc.startLine) - 1);
      range = new vscode.Range(s, 0, e, 0);
    }
    const editor = await vscode.window.showTextDocument(uri, { preview: false, preserveFocus: o?.preserveFocus, viewColumn: vscode.ViewColumn.One });
    if (range) {
      // Select the span's first line, show the whole span from its top.
      const start = range.start;
      editor.selection = new vscode.Selection(start, start);
      editor.revealRange(range, vscode.TextEditorRevealType.AtTop);
    }
  }

  async showPacketDocument(folder: string): Promise<void> {
    const uri = packetUri(folder);
    const preview = this.d.packetView() === 'preview';
    await this.openMarkdown(uri, preview);
    if (preview) this.keepPreviewed(uri);
  }

  /** Keeps a previewed packet document open while its preview tab exists (logic/previewKeepalive). */
  private keepPreviewed(uri: vscode.Uri): void {
    this.previewed.add(uri.toString());
    this.keepalive ??= setInterval(() => {
      const { reopen, drop } = keepaliveTick(this.previewed, previewTabNames(), (u) => path.posix.basename(vscode.Uri.parse(u).path));
      for (const u of reopen) void vscode.workspace.openTextDocument(vscode.Uri.parse(u)).then(undefined, () => undefined);
      for (const u of drop) this.previewed.delete(u);
      if (this.previewed.size === 0 && this.keepalive) { clearInterval(this.keepalive); this.keepalive = undefined; }
    }, PREVIEW_KEEPALIVE_MS);
  }

  /** Beside the editor: the rendered preview, locked to this document (it follows the packet's
   * updates, not whichever markdown file is opened next; its escapes render as the text they
   * stand for), or the markdown source. */
  private async openMarkdown(uri: vscode.Uri, preview: boolean): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    if (preview) {
      // a locked preview opens a new column each time: the ones already showing this document go
      // first (three Show Packets made three columns and squeezed the editor to a strip)
      const stale = previewTabs(path.posix.basename(uri.path));
      if (stale.length) await vscode.window.tabGroups.close(stale, true);
      await vscode.commands.executeCommand('markdown.showLockedPreviewToSide', uri);
      return;
    }
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false, preserveFocus: true });
  }

  packetDocumentChanged(folder: string): void { this.d.packetDocs.changed(packetUri(folder)); }

  async showMarkdown(name: string, markdown: string, packet = false): Promise<void> {
    const uri = markdownUri(name);
    this.d.packetDocs.put(uri, markdown);
    await this.openMarkdown(uri, packet && this.d.packetView() === 'preview');
  }

  async writeClipboard(text: string): Promise<void> { await vscode.env.clipboard.writeText(text); }

  activeLocation(): { uri: string; line: number; character: number } | undefined {
    const e = vscode.window.activeTextEditor;
    if (!e || e.document.uri.scheme === PACKET_SCHEME) return undefined;
    return { uri: e.document.uri.toString(), line: e.selection.active.line, character: e.selection.active.character };
  }

  activeFolder(): string | undefined {
    const e = vscode.window.activeTextEditor;
    const f = e ? vscode.workspace.getWorkspaceFolder(e.document.uri) : undefined;
    return (f ?? vscode.workspace.workspaceFolders?.[0])?.uri.toString();
  }

  editorFolder(): string | undefined {
    const e = vscode.window.activeTextEditor;
    return e ? vscode.workspace.getWorkspaceFolder(e.document.uri)?.uri.toString() : undefined;
  }

  folders(): string[] { return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()); }

  async focusPanel(): Promise<void> { await vscode.commands.executeCommand(`${this.d.panelViewId}.focus`, { preserveFocus: true }); }

  log(line: string): void { this.d.output.info(line); }

  withProgress<T>(title: string, fn: () => Promise<T>): Promise<T> {
    return Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, fn));
  }

  async executeCommand(id: string): Promise<void> { await vscode.commands.executeCommand(id); }
}

function quote(p: string): string { return /[\s"'$]/.test(p) ? `"${p.replace(/(["\\$`])/g, '\\$1')}"` : p; }


