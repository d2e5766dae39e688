/**
 * Every `lamina.*` command and every server notification, as logic over two small interfaces:
 * `Host` (the editor: src/host.ts implements it with the VS Code API) and `Server` (the language
 * client). The unit tests drive this class with fakes of both.
 */
import type {
  GetPacketResult, IndexState, ListWorkflowsResult, LspRange, PacketChanged, RelevantWorkflow,
  RevealedSpan, SearchResult, ShownWorkflow, Span,
} from './protocol';
import { Requests } from './protocol';
import type { FromPanel, PanelState } from './panel/messages';
import { Store } from './logic/store';
import { noticeFromRequestError, noticeFromDegraded, noticeFromServerMessage, NoticeGate, type Action, type Notice } from './logic/serverMessages';
import { OPEN_FOLDER_COMMAND, folderName } from './logic/status';
import { packetDocWhileDown, serverView } from './logic/serverView';
import { norm } from './logic/store';

export interface PickItem { label: string; description?: string; detail?: string }

export interface Location {
  uri?: string;
  range?: LspRange;
  /** Fallback when the server gave no uri: workspace-relative file and 1-based lines. */
  folder?: string;
  file?: string;
  startLine?: number;
  endLine?: number;
}

export interface Host {
  showInputBox(o: { prompt: string; value?: string; placeHolder?: string }): Promise<string | undefined>;
  showQuickPick<T extends PickItem>(items: T[], o: { placeHolder: string; matchOnDetail?: boolean }): Promise<T | undefined>;
  notify(n: Notice): Promise<void>;
  info(text: string, ...actions: string[]): Promise<string | undefined>;
  openLocation(loc: Location, o?: { preserveFocus?: boolean }): Promise<void>;
  showPacketDocument(folder: string): Promise<void>;
  packetDocumentChanged(folder: string): void;
  /** `packet`: a packet, opened as `lamina.packetView` says; otherwise the markdown source. */
  showMarkdown(name: string, markdown: string, packet?: boolean): Promise<void>;
  writeClipboard(text: string): Promise<void>;
  activeLocation(): { uri: string; line: number; character: number } | undefined;
  /** The folder of the active editor, else the first workspace folder. */
  activeFolder(): string | undefined;
  /** The workspace folder of the active text editor only (undefined without one). */
  editorFolder(): string | undefined;
  folders(): string[];
  focusPanel(): Promise<void>;
  /** Runs one of a notice's actions (the panel's buttons while the server is not running). */
  runAction(a: Action, n: Notice): Promise<void>;
  log(line: string): void;
  withProgress<T>(title: string, fn: () => Promise<T>): Promise<T>;
  executeCommand(id: string): Promise<void>;
}

export interface Server {
  request<T>(method: string, params: unknown): Promise<T>;
}

export interface Panel {
  setState(s: PanelState): void;
  reveal(id: string): void;
}

export class Controller {
  readonly store = new Store();
  private panel: Panel | undefined;
  serverPhase: PanelState['server'] = 'starting';
  /** Why the server is not running (a start failure, a crash), with what to do; null while it runs. */
  serverProblem: Notice | null = null;
  /** The last packet markdown the running server gave per folder: the packet document shows it, marked stale, while the server is down. */
  private readonly lastMarkdown = new Map<string, string>();
  /** One notification per problem per server start, whoever noticed it (the server or this client). */
  private readonly gate = new NoticeGate();

  constructor(private readonly host: Host, private readonly server: Server) {}

  attachPanel(p: Panel | undefined): void { this.panel = p; this.refreshPanel(); }

  /** Multi-root: the active editor's folder, else the folder of the last task or packet, else the first. */
  folder(explicit?: string): string | undefined {
    return explicit ?? this.host.editorFolder() ?? this.store.current ?? this.host.activeFolder();
  }

  panelState(): PanelState {
    const f = this.folder() ?? null;
    const fp = this.store.packetOf(f);
    const index = this.store.indexOf(f) ?? this.store.indexStates()[0] ?? null;
    return {
      folder: f, task: fp.task, packetState: fp.state, packet: fp.packet, error: fp.error, index, server: this.serverPhase,
      serverProblem: this.serverProblem?.text ?? null, serverActions: this.serverProblem?.actions ?? [], folderCount: this.host.folders().length,
    };
  }

  refreshPanel(): void { this.panel?.setState(this.panelState()); }

  /**
   * The server's phase. While it is not running the store keeps what the last server gave (the
   * panel shows it marked stale, the tasks go back to the next server); 'running' starts afresh.
   */
  setServerPhase(phase: PanelState['server'], problem?: Notice | null): void {
    this.serverPhase = phase;
    this.serverProblem = phase === 'running' ? null : problem ?? null;
    if (phase === 'running') {
      // a restarted server (a restart-only setting, the repository's config file, a crash) starts
      // without tasks: it gets each folder's back, with the workflow picked by hand, if any
      const carried = this.store.tasks();
      this.store.reset();
      if (carried.length) void this.restoreTasks(carried);
    }
    if (phase === 'starting') this.gate.reset();  // a (re)start may say everything again, once
    this.refreshPanel();
    // an open packet document says at once that its packet is stale, or shows the new server's
    for (const f of this.host.folders()) this.host.packetDocumentChanged(f);
  }

  private async restoreTasks(tasks: { folder: string; task: string; workflow: string }[]): Promise<void> {
    for (const { folder, task, workflow } of tasks) {
      try {
        if (workflow) await this.server.request(Requests.selectWorkflow, { workflow, task, folder });
        else await this.server.request(Requests.setTask, { task, folder });
        this.store.taskSet(folder, task, workflow);
        this.host.log(`the restarted server has the task of ${folderName(folder)} again${workflow ? ` (workflow ${workflow})` : ''}`);
      } catch (err) {
        // Said, not only logged: the panel now shows no task, and the user may not know why.
        this.host.log(`restoring the task of ${folderName(folder)} failed: ${describe(err)}`);
        const n = noticeFromRequestError(err, 'Setting it');
        void this.notice({ ...n, severity: 'warning', text: `The restarted server does not have the task of ${folderName(folder)} ("${task}") again: ${n.text} Lamina: Set Task sets it.` });
      }
    }
    this.refreshPanel();
  }

  /** Shows a notice unless the same problem was already shown since the server (re)started. */
  notice(n: Notice): Promise<void> {
    return this.gate.admit(n) ? this.host.notify(n) : Promise.resolve();
  }

  /** Runs a command; a refusal becomes one notification, the details go to the output channel. */
  /** Runs a command about a folder's index; in a window with no folder, says to open one instead
   * (the server's LAMINA_WORKSPACE_INVALID came twice, and Show Packet did nothing). */
  async withFolder(fn: () => Promise<void>): Promise<void> {
    if (this.host.folders().length > 0) { await fn(); return; }
    const choice = await this.host.info(NO_FOLDER_MESSAGE, 'Open Folder');
    if (choice === 'Open Folder') await this.host.executeCommand(OPEN_FOLDER_COMMAND);
  }

  async guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      this.host.log(`${what} failed: ${describe(err)}`);
      await this.host.notify(noticeFromRequestError(err, what));
      return undefined;
    }
  }

  // ---------------------------------------------------------------- notifications
  async onPacketChanged(n: PacketChanged): Promise<void> {
    n = { ...n, folder: n.folder || this.host.folders()[0] || '' };
    const fetch = this.store.packetChanged(n);
    this.refreshPanel();
    this.host.packetDocumentChanged(n.folder);
    if (n.state === 'error' && n.error) this.host.log(`packet for "${n.task}": ${n.error.code}: ${n.error.message}`);
    if (fetch) await this.fetchPacket(n.folder);
  }

  onIndexState(s: IndexState): void {
    // a single-folder server may leave `folder` out: it is the (first) workspace folder
    this.store.indexChanged({ ...s, folder: s.folder || this.host.folders()[0] || '' });
    if (s.retrieval === 'lexical_degraded') {
      void this.notice(noticeFromDegraded(s.last_error));
    }
    this.refreshPanel();
  }

  /**
   * At start: an invalid workflow graph gets one notification whose action opens the YAML at the
   * first problem's line (the Problems view lists them all; the server serves the last valid graph).
   */
  async checkGraphs(): Promise<void> {
    for (const folder of this.host.folders()) {
      try {
        const r = await this.server.request<ListWorkflowsResult>(Requests.listWorkflows, { folder });
        const errors = (r.problems ?? []).filter((p) => p.severity !== 'warning');
        if (errors.length === 0) continue;
        const first = errors[0]!;
        const more = errors.length > 1 ? ` (+${errors.length - 1} more in the Problems view)` : '';
        void this.notice(noticeFromServerMessage(1, `LAMINA_GRAPH_INVALID: ${first.file}:${first.line}: ${first.reason}${more}`));
      } catch (err) {
        this.host.log(`lamina/listWorkflows failed: ${describe(err)}`);
      }
    }
  }

  async fetchPacket(folder: string): Promise<void> {
    try {
      const r = await this.server.request<GetPacketResult>(Requests.getPacket, { format: 'json', folder });
      if (this.store.packetFetched({ ...r, folder: r.folder ?? folder })) this.refreshPanel();
    } catch (err) {
      this.host.log(`lamina/getPacket failed: ${describe(err)}`);
    }
  }

  // ---------------------------------------------------------------- commands
  async setTask(task?: string): Promise<void> {
    const folder = this.folder();
    const t = (task ?? await this.host.showInputBox({
      prompt: 'Lamina: the task (a sentence, a bug report, a failing test)', value: this.store.packetOf(folder).task,
      placeHolder: 'e.g. Refund a payment that was captured twice',
    }))?.trim();
    if (!t) return;
    if (this.serverPhase === 'starting' && folder) {
      // a (re)starting server gets the folders' tasks once it runs (setServerPhase): sent now, this
      // one raced the restore of the task it replaces, which won, and the new task was lost
      this.store.taskSet(folder, t);
      this.refreshPanel();
      await this.host.focusPanel();
      return;
    }
    await this.guard('Lamina: Set Task', async () => {
      const r = await this.server.request<{ accepted: boolean; folder: string; task: string }>(Requests.setTask, { task: t, folder });
      this.store.taskSet(r.folder ?? folder ?? '', r.task ?? t);
      this.refreshPanel();
      await this.host.focusPanel();
    });
  }

  async clearTask(): Promise<void> {
    const folder = this.folder();
    await this.guard('Lamina: Clear Task', async () => {
      const r = await this.server.request<{ cleared: boolean; folder: string }>(Requests.clearTask, { folder });
      this.store.cleared(r.folder ?? folder ?? '');
      this.lastMarkdown.delete(norm(r.folder ?? folder ?? ''));
      this.refreshPanel();
      this.host.packetDocumentChanged(r.folder ?? folder ?? '');
    });
  }

  /** A one-off packet for any task, shown as markdown; the current task is left alone. */
  async preparePacket(): Promise<void> {
    const folder = this.folder();
    const task = (await this.host.showInputBox({ prompt: 'Lamina: prepare a one-off packet for this task', value: this.store.packetOf(folder).task }))?.trim();
    if (!task) return;
    await this.guard('Lamina: Prepare Packet', async () => {
      const r = await this.host.withProgress('Lamina: preparing a packet', () =>
        this.server.request<{ markdown?: string }>(Requests.prepare, { task, format: 'markdown', folder }));
      await this.host.showMarkdown(`prepared-${slug(task)}`, r.markdown ?? '', true);
    });
  }

  async selectWorkflow(): Promise<void> {
    const folder = this.folder();
    await this.guard('Lamina: Select Workflow', async () => {
      const list = await this.server.request<ListWorkflowsResult>(Requests.listWorkflows, { folder });
      for (const p of list.problems ?? []) this.host.log(`graph problem: ${p.file}:${p.line}: ${p.reason}`);
      const items = list.workflows.map((w) => ({
        label: w.workflow, description: `${w.title}${w.status !== 'active' ? ` (${w.status})` : ''}`,
        detail: [w.aliases?.length ? `aliases: ${w.aliases.join(', ')}` : '', `${w.file}:${w.line}`].filter(Boolean).join(' · '),
        workflow: w.workflow,
      }));
      if (items.length === 0) { await this.host.info('Lamina: this folder has no workflows under .lamina/workflows/.'); return; }
      const pick = await this.host.showQuickPick(items, { placeHolder: 'Select the workflow for the current task (bypasses automatic selection)', matchOnDetail: true });
      if (!pick) return;
      let task: string | undefined = this.store.packetOf(folder).task || undefined;
      if (!task) {
        task = (await this.host.showInputBox({ prompt: `Lamina: the task to prepare with workflow ${pick.workflow}` }))?.trim();
        if (!task) return;
      }
      const r = await this.server.request<{ folder: string; task: string }>(Requests.selectWorkflow, { workflow: pick.workflow, task, folder });
      this.store.taskSet(r.folder ?? folder ?? '', r.task ?? task, pick.workflow);
      this.refreshPanel();
      await this.host.focusPanel();
    });
  }

  async goToRelevantWorkflow(): Promise<void> {
    const at = this.host.activeLocation();
    if (!at) { await this.host.info('Lamina: open a file and put the cursor where you work first.'); return; }
    // the server answers for files of the workspace folders only (its refusal reads "pass a file: URI")
    if (!at.uri.startsWith('file:')) {
      await this.host.info('Lamina: Go to Relevant Workflow needs a saved file in a workspace folder: save this one there first.');
      return;
    }
    if (!this.host.folders().some((f) => at.uri.startsWith(`${f.replace(/\/+$/, '')}/`))) {
      await this.host.info(`Lamina: ${decodeURIComponent(at.uri.replace(/^.*\//, ''))} is outside the workspace folders, which are all Lamina indexes: open its folder to use it.`);
      return;
    }
    await this.guard('Lamina: Go to Relevant Workflow', async () => {
      const r = await this.server.request<{ workflows: RelevantWorkflow[] }>(Requests.goToRelevantWorkflow, {
        uri: at.uri, position: { line: at.line, character: at.character },
      });
      const wfs = r.workflows ?? [];
      if (wfs.length === 0) { await this.host.info('Lamina: no workflow declares or relates to this code.'); return; }
      let chosen: RelevantWorkflow | undefined = wfs[0];
      if (wfs.length > 1) {
        const pick = await this.host.showQuickPick(wfs.map((w) => ({
          label: w.workflow, description: `${w.title} · ${w.score.toFixed(2)}`, detail: w.why.join(' · '), wf: w,
        })), { placeHolder: 'Workflows relevant to this code, best first', matchOnDetail: true });
        chosen = pick?.wf;
      }
      if (chosen) await this.host.openLocation({ uri: chosen.uri, range: chosen.range, folder: this.host.activeFolder(), file: chosen.file, startLine: chosen.line, endLine: chosen.line });
    });
  }

  async showPacket(): Promise<void> {
    const folder = this.folder();
    if (!folder) { await this.host.info('Lamina: open a folder first.'); return; }
    await this.host.showPacketDocument(folder);
  }

  /** The `lamina-packet:` document's text; while the server is not running, the last one marked stale. */
  async packetMarkdown(folder: string): Promise<string> {
    if (this.serverPhase !== 'running') return packetDocWhileDown(this.serverPhase, this.serverProblem?.text, folderName(folder), this.lastMarkdown.get(norm(folder)));
    try {
      const r = await this.server.request<GetPacketResult>(Requests.getPacket, { format: 'markdown', folder });
      if (r.state === 'ready' && r.markdown) { this.lastMarkdown.set(norm(folder), r.markdown); return r.markdown; }
      this.lastMarkdown.delete(norm(folder));
      if (r.state === 'preparing') return `# Lamina packet\n\nPreparing the packet for: ${r.task}\n`;
      if (r.state === 'error' && r.error) return `# Lamina packet\n\n**${r.error.code}**: ${r.error.message}\n\n${r.error.remedy ?? ''}\n`;
      return `# Lamina packet\n\nNo current task in ${folderName(folder)}. Run **Lamina: Set Task** or type a task in the Lamina panel.\n`;
    } catch (err) {
      this.host.log(`lamina/getPacket (markdown) failed: ${describe(err)}`);
      return `# Lamina packet\n\nThe packet is not available: ${noticeFromRequestError(err, 'lamina/getPacket').text}\n`;
    }
  }

  async copyPacket(): Promise<void> {
    const folder = this.folder();
    await this.guard('Lamina: Copy Packet for Agent', async () => {
      const r = await this.server.request<GetPacketResult>(Requests.getPacket, { format: 'json', folder });
      if (r.state !== 'ready' || !r.packet) {
        await this.host.info(r.state === 'preparing' ? 'Lamina: the packet is still being prepared.' : 'Lamina: no packet yet: set a task first.');
        return;
      }
      await this.host.writeClipboard(JSON.stringify(r.packet, null, 2));
      await this.host.info(`Lamina: copied the packet (${r.packet.spans.length} spans, ${r.packet.budget.used} tokens) to the clipboard.`);
    });
  }

  async search(query?: string): Promise<void> {
    const folder = this.folder();
    const typed = query ?? await this.host.showInputBox({ prompt: 'Lamina: search code (words, identifiers, an error message)' });
    if (typed === undefined) return;  // cancelled
    const q = typed.trim();
    if (!q) { await this.host.info('Lamina: nothing to search for: type words, an identifier or an error message.'); return; }
    await this.guard('Lamina: Search Code', async () => {
      const r = await this.server.request<SearchResult>(Requests.search, { query: q, folder });
      const hits = r.hits ?? [];
      if (hits.length === 0) { await this.host.info(`Lamina: nothing matches "${q}".`); return; }
      const pick = await this.host.showQuickPick(searchItems(hits, r.retrieval), { placeHolder: searchPlaceholder(q, r), matchOnDetail: true });
      if (pick) await this.host.openLocation({ uri: pick.hit.uri, range: pick.hit.range, folder, file: pick.hit.file, startLine: pick.hit.start_line, endLine: pick.hit.end_line });
    });
  }

  async contextStatus(): Promise<void> {
    const folder = this.folder();
    await this.guard('Lamina: Context Status', async () => {
      const r = await this.server.request<Record<string, unknown>>(Requests.contextStatus, { folder });
      this.host.log(`context status: ${JSON.stringify(r, null, 2)}`);
      const choice = await this.host.info(statusSummary(r, folder), 'Rebuild Context', 'Show Details');
      if (choice === 'Rebuild Context') await this.rebuild();
      else if (choice === 'Show Details') await this.host.showMarkdown(`status-${folderName(folder ?? 'workspace')}`, statusDetails(r, folder));
    });
  }

  async rebuild(): Promise<void> {
    const folder = this.folder();
    await this.guard('Lamina: Rebuild Context', async () => {
      const r = await this.host.withProgress('Lamina: rebuilding the index (the old generation answers meanwhile)', () =>
        this.server.request<Record<string, unknown>>(Requests.contextRebuild, { folder }));
      this.host.log(`rebuild: ${JSON.stringify(r)}`);
      await this.host.info(`Lamina: rebuilt ${folderName(folder ?? '')}${typeof r?.['generation'] === 'number' ? ` (generation ${r['generation']})` : ''}.`);
    });
  }

  /** The code lens command: scroll the panel to the span, highlight it, open the span. */
  async revealSpan(arg: { id: string; folder?: string } | undefined): Promise<void> {
    if (!arg?.id) return;
    const folder = arg.folder ?? this.folder();
    if (folder) this.store.current = folder;
    this.refreshPanel();
    await this.host.focusPanel();
    this.panel?.reveal(arg.id);
    await this.openSpan({ id: arg.id, folder });
  }

  /** Opens a span of the current packet, re-resolved by the server through unsaved edits. */
  async openSpan(arg: { id: string; folder?: string; file?: string; startLine?: number; endLine?: number }): Promise<void> {
    const folder = arg.folder ?? this.folder();
    const known = this.store.packetOf(folder).packet?.spans.find((s) => s.id === arg.id);
    const fallback: Location = { folder, file: arg.file ?? known?.file, startLine: arg.startLine ?? known?.start_line, endLine: arg.endLine ?? known?.end_line };
    try {
      const r = await this.server.request<RevealedSpan>(Requests.revealSpan, { id: arg.id, folder });
      if (r.stale) this.host.log(`span ${arg.id} is stale: ${r.file} changed since the packet was built`);
      await this.host.openLocation({ ...fallback, uri: r.uri, range: r.range });
    } catch (err) {
      this.host.log(`lamina/revealSpan ${arg.id} failed (${describe(err)}); opening ${fallback.file}:${fallback.startLine} from the packet`);
      if (fallback.file) await this.host.openLocation(fallback);
      else await this.host.notify(noticeFromRequestError(err, 'Lamina: open span'));
    }
  }

  /** The code lens command and the panel's workflow links: open the YAML at the definition. */
  async showWorkflow(arg: { workflow: string; operation?: string; folder?: string } | string | undefined): Promise<void> {
    const workflow = typeof arg === 'string' ? arg : arg?.workflow;
    if (!workflow) return;
    const folder = (typeof arg === 'object' ? arg.folder : undefined) ?? this.folder();
    // an `implements <workflow>/<operation>` lens: the operation's line, not the workflow's
    const operation = typeof arg === 'object' ? arg.operation : undefined;
    await this.guard('Lamina: Show Workflow', async () => {
      const r = await this.server.request<ShownWorkflow>(Requests.showWorkflow, { workflow, folder, ...(operation ? { operation } : {}) });
      await this.host.openLocation({ uri: r.uri, range: r.range, folder, file: r.file, startLine: r.line, endLine: r.line });
    });
  }

  async onPanelMessage(m: FromPanel): Promise<void> {
    switch (m.type) {
      case 'ready': this.refreshPanel(); break;
      case 'setTask': await this.setTask(m.task); break;
      case 'clearTask': await this.clearTask(); break;
      case 'openSpan': await this.openSpan({ id: m.id, file: m.file, startLine: m.startLine, endLine: m.endLine }); break;
      case 'showWorkflow': await this.showWorkflow({ workflow: m.workflow }); break;
      case 'copyPacket': await this.copyPacket(); break;
      case 'showPacket': await this.showPacket(); break;
      case 'serverAction': await this.serverAction(m.kind); break;
    }
  }

  /** A button of the panel's "not running" banner: only the actions the banner offers run. */
  private async serverAction(kind: string): Promise<void> {
    const offered = serverView(this.panelState()).banner?.actions ?? [];
    const action = offered.find((a) => a.kind === kind);
    if (!action) { this.host.log(`panel asked for ${kind}, which the panel does not offer now: ignored`); return; }
    const notice: Notice = this.serverProblem ?? { severity: 'error', code: null, text: 'The Lamina server is not running.', actions: offered };
    await this.host.runAction(action, notice);
  }
}

export function searchItems(hits: Span[], retrieval?: string): (PickItem & { hit: Span })[] {
  return hits.map((h, i) => ({
    label: `#${i + 1} ${h.symbol || h.file}`,
    description: `${h.file}:${h.start_line}-${h.end_line} · ${h.score.toFixed(2)}${retrieval === 'lexical_degraded' ? ' · lexical_degraded' : ''}`,
    detail: h.reasons.join(' · '),
    hit: h,
  }));
}

/** The search pick's title line: a weak match says so (nothing shares the query's words or is
 * close in meaning), or ten spans of nothing in particular read as answers. */
export function searchPlaceholder(q: string, r: SearchResult): string {
  const notes = r.notes ?? [];
  if (notes.some((n) => n.startsWith('weak match'))) return `No good match for "${q}": nothing shares its words or is close in meaning; the nearest spans anyway`;
  if (notes.some((n) => n.startsWith("none of the query's words occurs"))) return `No word of "${q}" is in this folder's index (a misspelling, a renamed name?): spans near it in meaning`;
  return `Ranked spans for "${q}"${r.retrieval ? ` (${r.retrieval})` : ''}`;
}

export const NO_FOLDER_MESSAGE = 'Lamina: no folder is open. Open one and Lamina indexes it; then set a task or search.';

export function statusSummary(r: Record<string, unknown>, folder?: string): string {
  // the live `indexState` first (flat strings and counts), then the CLI status fields
  const live = (r['indexState'] ?? {}) as Record<string, unknown>;
  const g = (k: string): unknown => live[k] ?? r[k];
  const parts: string[] = [];
  const gen = g('generation');
  const genNo = typeof gen === 'object' && gen !== null ? (gen as Record<string, unknown>)['id'] ?? (gen as Record<string, unknown>)['generation'] : gen;
  parts.push(`generation ${genNo ?? '—'}`);
  for (const k of ['freshness', 'retrieval']) { const v = g(k); if (typeof v === 'string') parts.push(v); }
  for (const k of ['files', 'chunks']) { const v = g(k); if (typeof v === 'number') parts.push(`${v} ${k}`); }
  const pending = g('pending') ?? g('pending_embeddings');
  if (typeof pending === 'number' && pending > 0) parts.push(`${pending} pending`);
  if (g('model') === 'loading') parts.push('model loading (BM25 until it is ready)');
  const history = historyLine(r);
  if (history) parts.push(history);
  // files the syncs of saved paths skipped since the last full scan (binary, too large, ...)
  const recent = r['skipped_recent'];
  if (Array.isArray(recent) && recent.length > 0) {
    const last = recent[recent.length - 1] as { path?: unknown; reason?: unknown };
    parts.push(`${recent.length} skipped since the full scan (last: ${String(last.path)}, ${String(last.reason)})`);
  }
  const err = g('last_error') ?? g('last_failure');
  if (typeof err === 'string' && err) parts.push(`last error: ${err}`);
  return `Lamina${folder ? ` (${folderName(folder)})` : ''}: ${parts.join(' · ')}`;
}

/** Context Status's details: the server's status lines (`lamina context status`'s wording, then
 * what only the server knows) in a block that keeps their columns, the raw fields after them. */
export function statusDetails(r: Record<string, unknown>, folder?: string): string {
  const lines = Array.isArray(r['lines']) ? r['lines'].filter((l): l is string => typeof l === 'string') : [];
  const json = JSON.stringify(r, (k, v: unknown) => (k === 'lines' ? undefined : v), 2);
  const head = `# Lamina context status${folder ? `: ${folderName(folder)}` : ''}\n\n`;
  const body = lines.length > 0 ? fenced(lines.join('\n'), 'text') + '\n' : '';
  return `${head}${body}## All fields\n\n${fenced(json, 'json')}`;
}

/** A fenced block no line of `text` can close (a longer fence than any backtick run in it). */
function fenced(text: string, lang: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}\n`;
}

/** The history leg as `lamina context status` reads it: on with the bound in force (the index
 * writer's: an editor setting, the environment or the repository's `.lamina/config.toml`), or off
 * and why (not a git repository, a database from a newer Lamina, ...). */
export function historyLine(r: Record<string, unknown>): string {
  const state = r['history'];
  if (typeof state !== 'string' || !state) return '';
  if (!state.startsWith('on')) return `history ${state}`;
  const n = r['history_max_commits'];
  const years = r['history_max_years'];
  if (typeof n !== 'number' || !n) return 'history on';
  const votes = typeof years === 'number' && years > 0 ? `the last ${years} years vote` : 'all vote';
  return `history on (newest ${n.toLocaleString('en-US')} commit${n === 1 ? '' : 's'} read, ${votes})`;
}

function slug(s: string): string { return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'task'; }

export function describe(err: unknown): string {
  const e = err as { message?: string; code?: number; data?: unknown };
  return `${e?.message ?? String(err)}${e?.code !== undefined ? ` (code ${e.code})` : ''}${e?.data !== undefined ? ` ${JSON.stringify(e.data)}` : ''}`;
}
