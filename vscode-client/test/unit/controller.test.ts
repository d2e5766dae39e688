import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'fs';
import path from 'path';
import { Controller, NO_FOLDER_MESSAGE, historyLine, searchPlaceholder, searchItems, statusDetails, statusSummary, type Host, type Location, type PickItem, type Server } from '../../src/controller';
import { noticeFromStartFailure, type Action, type Notice } from '../../src/logic/serverMessages';
import { serverView } from '../../src/logic/serverView';
import type { PanelState } from '../../src/panel/messages';
import type { Packet } from '../../src/protocol';

const FIXTURE: Packet = JSON.parse(readFileSync(path.join(process.cwd(), 'test/fixtures/packet.json'), 'utf8'));
const FOLDER = 'file:///w/shop';

class FakeHost implements Host {
  inputs: (string | undefined)[] = [];
  picks: ((items: PickItem[]) => PickItem | undefined)[] = [];
  notices: Notice[] = [];
  infos: string[] = [];
  opened: Location[] = [];
  clipboard = '';
  logs: string[] = [];
  focused = 0;
  markdown: [string, string, boolean][] = [];
  docChanged: string[] = [];
  shownPacketDocs: string[] = [];
  pickedItems: PickItem[][] = [];
  active: { uri: string; line: number; character: number } | undefined;
  async showInputBox(): Promise<string | undefined> { return this.inputs.shift(); }
  async showQuickPick<T extends PickItem>(items: T[]): Promise<T | undefined> { this.pickedItems.push(items); const f = this.picks.shift(); return f ? (f(items) as T | undefined) : undefined; }
  async notify(n: Notice): Promise<void> { this.notices.push(n); }
  answer: string | undefined = undefined;  // the button the next info message's user picks
  async info(text: string): Promise<string | undefined> { this.infos.push(text); return this.answer; }
  async openLocation(loc: Location): Promise<void> { this.opened.push(loc); }
  async showPacketDocument(folder: string): Promise<void> { this.shownPacketDocs.push(folder); }
  packetDocumentChanged(folder: string): void { this.docChanged.push(folder); }
  async showMarkdown(name: string, md: string, packet = false): Promise<void> { this.markdown.push([name, md, packet]); }
  async writeClipboard(text: string): Promise<void> { this.clipboard = text; }
  activeLocation() { return this.active; }
  editor: string | undefined;
  activeFolder(): string { return this.editor ?? FOLDER; }
  editorFolder(): string | undefined { return this.editor; }
  folderList = [FOLDER];
  folders(): string[] { return this.folderList; }
  async focusPanel(): Promise<void> { this.focused++; }
  actions: [Action, Notice][] = [];
  async runAction(a: Action, n: Notice): Promise<void> { this.actions.push([a, n]); }
  log(line: string): void { this.logs.push(line); }
  async withProgress<T>(_t: string, fn: () => Promise<T>): Promise<T> { return fn(); }
  executed: string[] = [];
  async executeCommand(id: string): Promise<void> { this.executed.push(id); }
}

class FakeServer implements Server {
  calls: [string, unknown][] = [];
  constructor(private readonly answers: Record<string, (p: any) => unknown>) {}
  async request<T>(method: string, params: unknown): Promise<T> {
    this.calls.push([method, params]);
    const a = this.answers[method];
    if (!a) throw Object.assign(new Error(`Unhandled method ${method}`), { code: -32601 });
    return a(params) as T;
  }
}

function setup(answers: Record<string, (p: any) => unknown>) {
  const host = new FakeHost();
  const server = new FakeServer(answers);
  const c = new Controller(host, server);
  const states: PanelState[] = [];
  const reveals: string[] = [];
  c.attachPanel({ setState: (s) => states.push(s), reveal: (id) => reveals.push(id) });
  c.setServerPhase('running');
  host.docChanged.length = 0;  // a phase change refreshes the open packet documents: start each test from none
  return { host, server, c, states, reveals };
}

test('set task: lamina/setTask with the folder, panel shows preparing, then the packet after packetChanged', async () => {
  const { host, server, c, states } = setup({
    'lamina/setTask': (p) => ({ accepted: true, folder: p.folder, task: p.task }),
    'lamina/getPacket': (p) => ({ folder: p.folder, task: FIXTURE.task, packetId: 'p1', state: 'ready', packet: FIXTURE }),
  });
  host.inputs.push('  Refund a payment that was captured twice ');
  await c.setTask();
  assert.deepEqual(server.calls[0], ['lamina/setTask', { task: 'Refund a payment that was captured twice', folder: FOLDER }]);
  assert.equal(states.at(-1)!.packetState, 'preparing');
  assert.equal(host.focused, 1);
  await c.onPacketChanged({ folder: FOLDER, packetId: 'p1', task: FIXTURE.task, state: 'ready', outcome: 'multi_workflow', workflows: ['refund-order', 'payment-capture'], spans: 22 });
  assert.deepEqual(server.calls[1], ['lamina/getPacket', { format: 'json', folder: FOLDER }]);
  const last = states.at(-1)!;
  assert.equal(last.packetState, 'ready');
  assert.equal(last.packet?.selection.status, 'multi_workflow');
  assert.deepEqual(host.docChanged, [FOLDER]);
  // the same packet announced again is not fetched again
  await c.onPacketChanged({ folder: FOLDER, packetId: 'p1', task: FIXTURE.task, state: 'ready' });
  assert.equal(server.calls.filter(([m]) => m === 'lamina/getPacket').length, 1);
});

test('set task: an empty input sends nothing', async () => {
  const { host, server, c } = setup({});
  host.inputs.push('   ');
  await c.setTask();
  assert.equal(server.calls.length, 0);
});

test('reveal span (the code lens command): panel focused and highlighted, span opened where the server resolves it', async () => {
  const range = { start: { line: 55, character: 0 }, end: { line: 78, character: 0 } };
  const { host, server, c, reveals } = setup({
    'lamina/revealSpan': (p) => ({ id: p.id, rank: 2, file: 'backend/inkwell/payments/refunds.py', symbol: 'RefundService.refund_order', uri: `${FOLDER}/backend/inkwell/payments/refunds.py`, range, stale: false }),
  });
  await c.revealSpan({ id: '892df37cc4c4d9db', folder: FOLDER });
  assert.equal(host.focused, 1);
  assert.deepEqual(reveals, ['892df37cc4c4d9db']);
  assert.deepEqual(server.calls[0], ['lamina/revealSpan', { id: '892df37cc4c4d9db', folder: FOLDER }]);
  assert.equal(host.opened[0]!.uri, `${FOLDER}/backend/inkwell/payments/refunds.py`);
  assert.deepEqual(host.opened[0]!.range, range);
});

test('open span from the panel: falls back to the packet file:line when lamina/revealSpan is refused', async () => {
  const { host, c } = setup({});
  await c.onPanelMessage({ type: 'openSpan', id: 'abc', file: 'backend/inkwell/payments/gateway.py', startLine: 84, endLine: 99 });
  assert.deepEqual(host.opened[0], { folder: FOLDER, file: 'backend/inkwell/payments/gateway.py', startLine: 84, endLine: 99 });
  assert.match(host.logs.join('\n'), /lamina\/revealSpan abc failed/);
  assert.equal(host.notices.length, 0);
});

test('go to relevant workflow: one result opens directly, several ask with a quick pick', async () => {
  const wf = (id: string, line: number, score: number) => ({ workflow: id, title: id, status: 'active', uri: `${FOLDER}/.lamina/workflows/20-orders.yaml`, range: { start: { line: line - 1, character: 2 }, end: { line: line - 1, character: 10 } }, file: '.lamina/workflows/20-orders.yaml', line, score, why: ['implemented_by RefundService.refund_order'] });
  let answer = [wf('refund-order', 113, 1)];
  const { host, server, c } = setup({ 'lamina/goToRelevantWorkflow': () => ({ workflows: answer }) });
  await c.goToRelevantWorkflow();
  assert.equal(server.calls.length, 0, 'no active editor: no request');
  assert.match(host.infos[0]!, /open a file/);
  host.active = { uri: `${FOLDER}/backend/inkwell/payments/refunds.py`, line: 60, character: 8 };
  await c.goToRelevantWorkflow();
  assert.deepEqual(server.calls[0], ['lamina/goToRelevantWorkflow', { uri: host.active.uri, position: { line: 60, character: 8 } }]);
  assert.equal(host.opened[0]!.range!.start.line, 112);
  answer = [wf('refund-order', 113, 1), wf('payment-capture', 40, 0.5)];
  host.picks.push((items) => items[1]);
  await c.goToRelevantWorkflow();
  assert.deepEqual(host.pickedItems[0]!.map((i) => i.label), ['refund-order', 'payment-capture']);
  assert.equal(host.pickedItems[0]![0]!.detail, 'implemented_by RefundService.refund_order');
  assert.equal(host.opened[1]!.range!.start.line, 39);
});

test('go to relevant workflow: an untitled buffer or a file outside the folders says to save it in a folder; nothing is sent', async () => {
  const { host, server, c } = setup({ 'lamina/goToRelevantWorkflow': () => ({ workflows: [] }) });
  host.active = { uri: 'untitled:Untitled-1', line: 0, character: 0 };
  await c.goToRelevantWorkflow();
  host.active = { uri: 'file:///tmp/scratch.py', line: 3, character: 0 };
  await c.goToRelevantWorkflow();
  assert.equal(server.calls.length, 0, 'the server would refuse both with an API remedy (LAMINA_BAD_INPUT: pass a file: URI)');
  assert.deepEqual(host.notices, []);
  assert.match(host.infos[0]!, /Go to Relevant Workflow needs a saved file in a workspace folder: save this one/);
  assert.match(host.infos[1]!, /scratch\.py is outside the workspace folders/);
  host.active = { uri: `${FOLDER}/backend/x.py`, line: 3, character: 0 };
  await c.goToRelevantWorkflow();
  assert.equal(server.calls.length, 1);
});

test('search: ranked spans as quick pick items with reasons as detail; the pick opens the span', async () => {
  const hit = { ...FIXTURE.spans[0]!, uri: `${FOLDER}/backend/inkwell/payments/refunds.py`, range: { start: { line: 22, character: 0 }, end: { line: 38, character: 0 } } };
  const { host, server, c } = setup({ 'lamina/search': () => ({ hits: [hit], retrieval: 'hybrid', elapsed_ms: 12 }) });
  host.inputs.push('refund eligibility');
  host.picks.push((items) => items[0]);
  await c.search();
  assert.deepEqual(server.calls[0], ['lamina/search', { query: 'refund eligibility', folder: FOLDER }]);
  const item = host.pickedItems[0]![0]!;
  assert.equal(item.label, '#1 RefundPolicy.is_eligible');
  assert.equal(item.description, 'backend/inkwell/payments/refunds.py:23-38 · 1.87');
  assert.match(item.detail!, /^declared: implemented_by of refund-order\/check-refund-eligibility · bm25 symbol: refund policy/);
  assert.equal(host.opened[0]!.uri, hit.uri);
  assert.equal(searchItems([hit], 'lexical_degraded')[0]!.description!.endsWith('lexical_degraded'), true);
});

test('copy packet: the packet JSON goes to the clipboard verbatim', async () => {
  const { host, c } = setup({ 'lamina/getPacket': () => ({ folder: FOLDER, task: FIXTURE.task, packetId: 'p1', state: 'ready', packet: FIXTURE }) });
  await c.copyPacket();
  assert.deepEqual(JSON.parse(host.clipboard), FIXTURE);
  assert.match(host.infos[0]!, /copied the packet \(22 spans/);
});

test('a LAMINA refusal becomes one notification with its code; the details go to the output channel', async () => {
  const { host, c } = setup({
    'lamina/showWorkflow': () => { throw Object.assign(new Error('refused'), { code: -32001, data: { code: 'LAMINA_WORKFLOW_NOT_FOUND', message: "no workflow 'nope'", remedy: 'pass a workflow id from .lamina/workflows/' } }); },
  });
  await c.showWorkflow({ workflow: 'nope' });
  assert.equal(host.notices.length, 1);
  assert.equal(host.notices[0]!.code, 'LAMINA_WORKFLOW_NOT_FOUND');
  assert.match(host.logs.join('\n'), /-32001/);
});

test('select workflow: quick pick of lamina/listWorkflows, asks for a task when none is set', async () => {
  const { host, server, c } = setup({
    'lamina/listWorkflows': () => ({ workflows: [{ workflow: 'refund-order', title: 'Refund an order', aliases: ['order refund'], status: 'active', file: '.lamina/workflows/20-orders.yaml', line: 113 }], problems: [] }),
    'lamina/selectWorkflow': (p) => ({ accepted: true, folder: p.folder, task: p.task, workflow: p.workflow }),
  });
  host.picks.push((items) => items[0]);
  host.inputs.push('refund a damaged book');
  await c.selectWorkflow();
  assert.deepEqual(server.calls[1], ['lamina/selectWorkflow', { workflow: 'refund-order', task: 'refund a damaged book', folder: FOLDER }]);
  assert.match(host.pickedItems[0]![0]!.detail!, /aliases: order refund · .lamina\/workflows\/20-orders.yaml:113/);
});

test('show packet document: markdown from lamina/getPacket, a readable text when there is no task', async () => {
  let state = 'none';
  const { c } = setup({ 'lamina/getPacket': (p) => ({ folder: FOLDER, task: '', state, markdown: p.format === 'markdown' && state === 'ready' ? '# Packet\n' : null }) });
  assert.match(await c.packetMarkdown(FOLDER), /No current task in shop/);
  state = 'ready';
  assert.equal(await c.packetMarkdown(FOLDER), '# Packet\n');
});

test('prepare packet: the one-off packet opens as a packet (as lamina.packetView says)', async () => {
  const { c, host } = setup({ 'lamina/prepare': (p) => ({ markdown: `# Packet for ${p.task}\n` }) });
  host.inputs.push('refund a damaged book');
  await c.preparePacket();
  assert.deepEqual(host.markdown, [['prepared-refund-a-damaged-book', '# Packet for refund a damaged book\n', true]]);
});

test('context status: a one-line summary', () => {
  assert.equal(statusSummary({ generation: 4, freshness: 'fresh', retrieval: 'hybrid', files: 61, chunks: 420, pending: 0 }, FOLDER), 'Lamina (shop): generation 4 · fresh · hybrid · 61 files · 420 chunks');
  assert.equal(statusSummary({ indexState: { generation: 2, freshness: 'syncing', retrieval: 'hybrid_partial', pending: 7 } }), 'Lamina: generation 2 · syncing · hybrid_partial · 7 pending');
  assert.equal(statusSummary({ generation: 3, freshness: { state: 'fresh' }, retrieval: 'hybrid', skipped_recent: [{ path: 'a.bin', reason: 'binary' }, { path: 'big.py', reason: 'too_large' }] }), 'Lamina: generation 3 · hybrid · 2 skipped since the full scan (last: big.py, too_large)');
  assert.equal(statusSummary({ retrieval: 'hybrid', model: 'loading', indexState: { generation: 2, freshness: 'fresh', retrieval: 'hybrid', model: 'loading' } }), 'Lamina: generation 2 · fresh · hybrid · model loading (BM25 until it is ready)');
  // lamina/contextStatus: the CLI's status (freshness is an object there) plus the live indexState
  assert.equal(statusSummary({ generation: 1, freshness: { state: 'fresh', graph: 'fresh' }, retrieval: 'hybrid', files: 107, chunks: 662, pending_embeddings: 0, last_failure: null,
    indexState: { folder: FOLDER, generation: 1, files: 107, chunks: 662, pending: 0, retrieval: 'hybrid', freshness: 'fresh', last_error: '' } }, FOLDER), 'Lamina (shop): generation 1 · fresh · hybrid · 107 files · 662 chunks');
  // the history leg: the bound in force, or why it is off
  const st = { generation: 3, freshness: 'fresh', retrieval: 'hybrid', files: 9, chunks: 20 };
  assert.equal(statusSummary({ ...st, history: 'on', history_max_commits: 20000, history_max_years: 5 }),
    'Lamina: generation 3 · fresh · hybrid · 9 files · 20 chunks · history on (newest 20,000 commits read, the last 5 years vote)');
  assert.equal(historyLine({ history: 'on', history_max_commits: 1, history_max_years: 0 }), 'history on (newest 1 commit read, all vote)');
  assert.equal(historyLine({ history: 'on', history_max_commits: 300, history_max_years: 2.5 }), 'history on (newest 300 commits read, the last 2.5 years vote)');
  assert.equal(historyLine({ history: 'off: not a git repository' }), 'history off: not a git repository');
  assert.equal(historyLine({ history: 'on' }), 'history on');
  assert.equal(historyLine({}), '');
});

test('search: a weak match says so in the pick\'s title line', () => {
  assert.equal(searchPlaceholder('refund', { hits: [], retrieval: 'hybrid' }), 'Ranked spans for "refund" (hybrid)');
  const weak = { hits: [], retrieval: 'hybrid', notes: ['weak match: the first result shares no word with the query and is not close in meaning (cosine 0.12; ...)'] };
  assert.equal(searchPlaceholder('zanzibar frobnicate', weak), 'No good match for "zanzibar frobnicate": nothing shares its words or is close in meaning; the nearest spans anyway');
  const unknown = { hits: [], notes: ["none of the query's words occurs in the index (zanzibar: a misspelling, or a name that changed): the lexical leg found nothing"] };
  assert.equal(searchPlaceholder('zanzibar', unknown), 'No word of "zanzibar" is in this folder\'s index (a misspelling, a renamed name?): spans near it in meaning');
});

test('no folder open: a folder command says to open one (and opens the picker) instead of asking the server', async () => {
  const { c, host, server } = setup({});
  host.folderList = [];
  let ran = false;
  host.answer = 'Open Folder';
  await c.withFolder(async () => { ran = true; });
  assert.equal(ran, false);
  assert.deepEqual(server.calls, []);
  assert.deepEqual(host.infos, [NO_FOLDER_MESSAGE]);
  assert.deepEqual(host.executed, ['workbench.action.files.openFolder']);
  host.folderList = [FOLDER];
  await c.withFolder(async () => { ran = true; });
  assert.equal(ran, true);
});

test('context status details: the status lines as the CLI prints them, the fields after them', () => {
  const r = { generation: 3, lines: ['workspace   /w/shop', 'retrieval   hybrid; pending embeddings 0', 'last failure generation 2: ``` fence'], writer: 'this process' };
  const md = statusDetails(r, FOLDER);
  assert.ok(md.startsWith('# Lamina context status: shop\n\n````text\nworkspace   /w/shop\nretrieval   hybrid; pending embeddings 0\nlast failure generation 2: ``` fence\n````\n'), md);
  const json = md.slice(md.indexOf('## All fields'));
  assert.match(json, /"writer": "this process"/);
  assert.doesNotMatch(json, /"lines"/);  // shown once, above
  // a server without the lines (an older one): the fields alone
  assert.equal(statusDetails({ generation: null }), '# Lamina context status\n\n## All fields\n\n```json\n{\n  "generation": null\n}\n```\n');
});

test('index state and packet notifications without a folder belong to the first workspace folder', async () => {
  const { c, states } = setup({ 'lamina/getPacket': () => ({ folder: FOLDER, task: 't', packetId: 'p', state: 'ready', packet: FIXTURE }) });
  c.onIndexState({ generation: 1, files: 3, chunks: 9, pending: 0, retrieval: 'hybrid', freshness: 'fresh' } as never);
  assert.equal(states.at(-1)!.index!.folder, FOLDER);
  await c.onPacketChanged({ packetId: 'p', task: 't', state: 'ready' } as never);
  assert.equal(states.at(-1)!.packet?.task, FIXTURE.task);
});

test('multi-root: commands go to the active editor\'s folder; the panel follows it', async () => {
  const OTHER = 'file:///w/admin';
  const { host, server, c, states } = setup({ 'lamina/setTask': (p) => ({ accepted: true, folder: p.folder, task: p.task }) });
  host.editor = OTHER;
  await c.setTask('audit the refunds');
  assert.deepEqual(server.calls[0], ['lamina/setTask', { task: 'audit the refunds', folder: OTHER }]);
  assert.equal(states.at(-1)!.folder, OTHER);
  assert.equal(states.at(-1)!.task, 'audit the refunds');
  host.editor = undefined;  // focus in the panel: the folder of the last task stays
  c.refreshPanel();
  assert.equal(states.at(-1)!.folder, OTHER);
  host.editor = FOLDER;
  c.refreshPanel();
  assert.equal(states.at(-1)!.folder, FOLDER);
  assert.equal(states.at(-1)!.task, '');
  // the panel names its folder when there are several (it switches with the editor)
  assert.equal(states.at(-1)!.folderCount, 1);
  host.folderList = [FOLDER, OTHER];
  c.refreshPanel();
  assert.equal(states.at(-1)!.folderCount, 2);
});

test('lexical_degraded in the index state: one warning with Reinstall Model, once per server start', () => {
  const { host, c } = setup({});
  const st = { folder: FOLDER, generation: 1, files: 3, chunks: 9, pending: 0, retrieval: 'lexical_degraded', freshness: 'fresh', last_error: '' };
  c.onIndexState(st);
  c.onIndexState({ ...st, generation: 2 });
  assert.equal(host.notices.length, 1);
  assert.equal(host.notices[0]!.code, 'LAMINA_DENSE_UNAVAILABLE');
  assert.deepEqual(host.notices[0]!.actions.map((a) => a.kind), ['reinstallModel', 'setupInstructions']);
  c.onIndexState({ ...st, retrieval: 'hybrid' });
  assert.equal(host.notices.length, 1);
  c.setServerPhase('starting');  // a restart may say it again, once
  c.setServerPhase('running');
  c.onIndexState(st);
  assert.equal(host.notices.length, 2);
  // the server's own message about the model is the same problem: no second notice
  void c.notice({ severity: 'warning', code: 'LAMINA_RETRIEVAL_INTEGRITY', text: 'LAMINA_RETRIEVAL_INTEGRITY: missing', actions: [] });
  assert.equal(host.notices.length, 2);
});

test('an invalid graph at start: one LAMINA_GRAPH_INVALID notification that opens the YAML at the line', async () => {
  const problems = [
    { file: '.lamina/workflows/20-orders.yaml', line: 101, reason: "unknown actor 'nobody'", severity: 'error' },
    { file: '.lamina/workflows/20-orders.yaml', line: 140, reason: 'dangling implemented_by', severity: 'warning' },
    { file: '.lamina/workflows/30-accounts.yaml', line: 7, reason: 'duplicate id', severity: 'error' },
  ];
  const { host, c } = setup({ 'lamina/listWorkflows': () => ({ workflows: [], problems }) });
  await c.checkGraphs();
  await c.checkGraphs();
  assert.equal(host.notices.length, 1);
  const n = host.notices[0]!;
  assert.equal(n.code, 'LAMINA_GRAPH_INVALID');
  assert.equal(n.file, '.lamina/workflows/20-orders.yaml');
  assert.equal(n.line, 101);
  assert.equal(n.actions[0]!.kind, 'openYaml');
  assert.match(n.text, /\(\+1 more in the Problems view\)$/);
});

test('a restarted server gets the current task back, with the workflow picked by hand; a cleared one stays cleared', async () => {
  const { host, server, c, states } = setup({
    'lamina/setTask': (p) => ({ accepted: true, folder: p.folder, task: p.task }),
    'lamina/selectWorkflow': (p) => ({ folder: p.folder, task: p.task }),
    'lamina/listWorkflows': () => ({ workflows: [{ workflow: 'ship-order', title: 'Ship', status: 'active', file: 'w.yaml', line: 1 }], problems: [] }),
    'lamina/clearTask': (p) => ({ cleared: true, folder: p.folder }),
  });
  const restart = async (): Promise<[string, unknown][]> => {
    const before = server.calls.length;
    c.setServerPhase('starting');
    c.setServerPhase('running');
    await new Promise((r) => setImmediate(r));
    return server.calls.slice(before);
  };
  assert.deepEqual(await restart(), [], 'no task: nothing to restore');
  host.inputs.push('Refund a payment twice');
  await c.setTask();
  assert.deepEqual(await restart(), [['lamina/setTask', { task: 'Refund a payment twice', folder: FOLDER }]]);
  assert.equal(states.at(-1)!.task, 'Refund a payment twice');
  assert.equal(states.at(-1)!.packetState, 'preparing');
  host.picks.push((items) => items[0]);
  await c.selectWorkflow();
  assert.deepEqual(await restart(), [['lamina/selectWorkflow', { workflow: 'ship-order', task: 'Refund a payment twice', folder: FOLDER }]]);
  assert.deepEqual(await restart(), [['lamina/selectWorkflow', { workflow: 'ship-order', task: 'Refund a payment twice', folder: FOLDER }]], 'and again after a second restart');
  host.inputs.push('Another task');
  await c.setTask();
  assert.deepEqual(await restart(), [['lamina/setTask', { task: 'Another task', folder: FOLDER }]], 'a new task drops the picked workflow');
  await c.clearTask();
  assert.deepEqual(await restart(), []);
  assert.ok(host.logs.some((l) => l.includes('the restarted server has the task of shop again')), host.logs.join('\n'));
});

test('Search Code with nothing typed says so; cancelled, it says nothing', async () => {
  const { host, server, c } = setup({});
  host.inputs.push('   ');
  await c.search();
  assert.match(host.infos.at(-1)!, /nothing to search for/);
  const said = host.infos.length;
  await c.search();  // Escape: the input box answers undefined
  assert.equal(host.infos.length, said);
  assert.deepEqual(server.calls, []);
});

test('a task set while the server restarts is the one the restarted server gets (the old one does not come back)', async () => {
  const { host, server, c, states } = setup({
    'lamina/setTask': (p) => ({ accepted: true, folder: p.folder, task: p.task }),
  });
  host.inputs.push('Task A');
  await c.setTask();
  c.setServerPhase('starting');
  const before = server.calls.length;
  host.inputs.push('Task B');
  await c.setTask();
  assert.equal(states.at(-1)!.task, 'Task B');
  assert.deepEqual(server.calls.slice(before), [], 'not sent to a server that is not up yet');
  c.setServerPhase('running');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(server.calls.slice(before), [['lamina/setTask', { task: 'Task B', folder: FOLDER }]]);
  assert.equal(states.at(-1)!.task, 'Task B');
});

test('a task the restarted server refuses to take back is said in a notification, not only logged', async () => {
  let refuse = false;
  const { host, c } = setup({
    'lamina/setTask': (p) => {
      if (refuse) throw Object.assign(new Error('refused'), { code: -32001, data: { code: 'LAMINA_INDEX_LOCKED', message: 'the index is read-only in this server', remedy: 'stop the other Lamina process' } });
      return { accepted: true, folder: p.folder, task: p.task };
    },
  });
  host.inputs.push('Refund a payment twice');
  await c.setTask();
  assert.equal(host.notices.length, 0);
  refuse = true;
  c.setServerPhase('starting');
  c.setServerPhase('running');
  await new Promise((r) => setImmediate(r));
  assert.equal(host.notices.length, 1, host.logs.join('\n'));
  const [n] = host.notices;
  assert.equal(n!.severity, 'warning');
  assert.equal(n!.code, 'LAMINA_INDEX_LOCKED');
  assert.match(n!.text, /^The restarted server does not have the task of shop \("Refund a payment twice"\) again: LAMINA_INDEX_LOCKED: the index is read-only/);
  assert.ok(host.logs.some((l) => l.includes('restoring the task of shop failed')), host.logs.join('\n'));
});

test('the server fails to start again after a packet: the panel says not running with the fix, keeps the packet marked stale, the packet document too; a new server\'s packet is normal again', async () => {
  let packetId = 'p1';
  const { host, server, c, states } = setup({
    'lamina/setTask': (p) => ({ accepted: true, folder: p.folder, task: p.task }),
    'lamina/getPacket': (p) => p.format === 'markdown'
      ? { folder: FOLDER, task: FIXTURE.task, packetId, state: 'ready', markdown: `# Packet ${packetId}\n` }
      : { folder: FOLDER, task: FIXTURE.task, packetId, state: 'ready', packet: { ...FIXTURE, packet_id: packetId } },
  });
  await c.setTask(FIXTURE.task);
  await c.onPacketChanged({ folder: FOLDER, packetId: 'p1', task: FIXTURE.task, state: 'ready' });
  assert.equal(await c.packetMarkdown(FOLDER), '# Packet p1\n');
  assert.equal(serverView(states.at(-1)!).stale, false);

  // the server crashed and its restart failed (or a restart-only setting points at a broken Python)
  const failure = noticeFromStartFailure('lamina-missing', "Lamina is not installed for /usr/bin/python3: No module named 'lsp_server'", { setupDir: '/src/lamina' });
  host.docChanged.length = 0;
  c.setServerPhase('stopped');
  c.setServerPhase('starting');
  c.setServerPhase('failed', failure);
  // the defect: an open packet document kept showing the last packet as current. It is refreshed
  // at once, and says so without asking the dead server
  assert.ok(host.docChanged.includes(FOLDER), 'the open packet document is refreshed when the server goes down');
  const calls = server.calls.length;
  const doc = await c.packetMarkdown(FOLDER);
  assert.equal(server.calls.length, calls, 'no request to a server that is not running');
  assert.match(doc, /^> \*\*Stale packet\*\* from a Lamina server that is no longer running/);
  assert.match(doc, /Lamina is not installed for \/usr\/bin\/python3/);
  assert.match(doc, /# Packet p1\n$/, 'the last packet follows, under the mark');
  const down = states.at(-1)!;
  assert.equal(down.server, 'failed');
  assert.equal(down.serverProblem, failure.text, 'the error and what to do, in the panel');
  assert.deepEqual(down.serverActions!.map((a) => a.kind), ['setupInstructions', 'choosePython', 'runSetup']);
  assert.equal(down.packet?.selection.status, FIXTURE.selection.status, 'the last packet stays visible (it is the user\'s context)…');
  const view = serverView(down);
  assert.equal(view.stale, true, '…but is stale');
  assert.equal(view.packetActions, false);
  assert.equal(view.canSetTask, false);
  assert.deepEqual(view.banner!.actions.map((a) => a.kind), ['setupInstructions', 'choosePython', 'runSetup', 'restartServer', 'showOutput']);

  // the banner's buttons run the notice's actions; anything the banner does not offer is ignored
  await c.onPanelMessage({ type: 'serverAction', kind: 'runSetup' });
  await c.onPanelMessage({ type: 'serverAction', kind: 'restartServer' });
  await c.onPanelMessage({ type: 'serverAction', kind: 'reinstallModel' });
  assert.deepEqual(host.actions.map(([a]) => a.kind), ['runSetup', 'restartServer']);
  assert.equal(host.actions[0]![1].dir, '/src/lamina', 'Run Setup runs in the checkout the notice names');

  // Restart Server: starting (still stale), running (the task goes back), the new packet: normal again
  c.setServerPhase('stopped');
  c.setServerPhase('starting');
  assert.equal(serverView(states.at(-1)!).stale, true);
  assert.equal(serverView(states.at(-1)!).canSetTask, true, 'a starting server takes a task once it runs');
  assert.equal(states.at(-1)!.serverProblem, null);
  c.setServerPhase('running');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(server.calls.at(-1), ['lamina/setTask', { task: FIXTURE.task, folder: FOLDER }]);
  packetId = 'p2';
  await c.onPacketChanged({ folder: FOLDER, packetId: 'p2', task: FIXTURE.task, state: 'ready' });
  const back = states.at(-1)!;
  assert.equal(back.server, 'running');
  assert.equal((back.packet as unknown as { packet_id: string }).packet_id, 'p2');
  assert.deepEqual(serverView(back), { banner: null, stale: false, staleNote: null, canSetTask: true, packetActions: true });
  assert.equal(await c.packetMarkdown(FOLDER), '# Packet p2\n');
});
