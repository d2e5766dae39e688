/**
 * The side panel in headless Chromium (Debian's chromium driven by playwright-core), from a real
 * packet (`lamina work prepare "Refund a payment that was captured twice" --workspace examples/shop`):
 * what it shows, what clicks and keys post to the extension, the CSP, and light/dark/high-contrast
 * screenshots under artifacts/.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import pw from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { panelHtml, contentSecurityPolicy } from '../../src/panel/html';
import { ORDER_NOTE } from '../../src/panel/render';
import type { PanelState } from '../../src/panel/messages';
import type { Packet } from '../../src/protocol';
import { THEMES } from './themes';

const ROOT = process.cwd();
const ARTIFACTS = path.join(ROOT, 'artifacts');
const FIXTURE: Packet = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/packet.json'), 'utf8'));
/** The fixture's answers: a later chunk of a long declared symbol (`continues`) is listed under its first. */
const HEADS = FIXTURE.spans.filter((s) => !s.continues);
const NONCE = 'testNonce0123456789abcdefABCDEF0';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let server: http.Server;
let origin = '';
let browser: Browser;
const requests: string[] = [];

/** The shim VS Code provides inside a webview (acquireVsCodeApi), nonce'd like the real page's script. */
const SHIM = `window.__posted = []; window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.effectiveDirective + ' ' + (e.blockedURI || 'inline')));
window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), setState() {}, getState() { return undefined; } });`;

function page(theme: string): string {
  const html = panelHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/dist/panel.js`, styleUri: `${origin}/media/panel.css` });
  return html
    .replace('</head>', `<link rel="stylesheet" href="${origin}/theme/${theme}.css">\n</head>`)
    // the host shim first (with the nonce), and an injected inline script WITHOUT the nonce that must never run
    .replace('<main id="root"', `<script nonce="${NONCE}">${SHIM}</script>\n<script>window.__evil = 'inline script ran';</script>\n<main id="root"`);
}

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'dist/panel.js')), 'dist/panel.js: run `node esbuild.mjs` first');
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const send = (type: string, body: string | Buffer): void => { res.writeHead(200, { 'content-type': type }); res.end(body); };
    if (url.pathname === '/') return send('text/html', page(url.searchParams.get('theme') ?? 'dark'));
    if (url.pathname === '/dist/panel.js') return send('text/javascript', readFileSync(path.join(ROOT, 'dist/panel.js')));
    if (url.pathname === '/media/panel.css') return send('text/css', readFileSync(path.join(ROOT, 'media/panel.css')));
    const t = /^\/theme\/([\w-]+)\.css$/.exec(url.pathname);
    if (t && THEMES[t[1]!]) return send('text/css', `html { ${THEMES[t[1]!]!.join('; ')}; }`);
    res.writeHead(404); res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  browser = await pw.chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

function state(packet: Packet | null, over: Partial<PanelState> = {}): PanelState {
  return {
    folder: 'file:///work/shop', task: packet?.task ?? '', packetState: packet ? 'ready' : 'none', packet, error: null, server: 'running',
    index: { folder: 'file:///work/shop', generation: 1, files: 61, chunks: 402, pending: 0, retrieval: 'hybrid', freshness: 'fresh' },
    ...over,
  };
}

async function open(theme: string, s: PanelState | null, viewport = { width: 420, height: 900 }): Promise<Page> {
  const p = await browser.newPage({ viewport });
  p.on('request', (r) => requests.push(r.url()));
  p.on('pageerror', (e) => { throw e; });
  await p.goto(`${origin}/?theme=${theme}`);
  await p.waitForFunction(() => (window as any).__posted?.some((m: any) => m.type === 'ready'));
  if (s) {
    await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), s);
    await p.waitForSelector(s.packet ? 'li.span' : '#retrieval');
  }
  return p;
}

const posted = (p: Page): Promise<any[]> => p.evaluate(() => (window as any).__posted);

test('shows the selection, the workflow closure, the ranked spans and the retrieval state', async () => {
  const p = await open('dark', state(FIXTURE));
  assert.equal((await p.textContent('#outcome'))!.trim(), 'Several workflows refund-order, payment-capture');
  const rows = await p.$$eval('table.candidates tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
  const scored = FIXTURE.selection.candidates.filter((c, i) => c.score > 0 && i < 6);
  assert.equal(rows.length, scored.length);
  assert.match((await p.textContent('#selection'))!, new RegExp(`\\+${FIXTURE.selection.candidates.length - scored.length} more workflows scored lower`));
  assert.match(rows[0]!, /^✓ refund-order Refund an order or some of its books 2\.22$/);
  assert.match(rows[2]!, /^admin-sales-report .* 2\.00$/);
  const ops = await p.$$eval('#wf-refund-order ol.operations > li strong', (els) => els.map((e) => e.textContent));
  assert.deepEqual(ops, FIXTURE.workflows[0]!.operations.map((o) => o.title));
  assert.equal(await p.$$eval('#wf-refund-order .invariants li', (els) => els.length), FIXTURE.workflows[0]!.invariants.length);
  assert.match((await p.textContent('#wf-refund-order .risks'))!, /high The same line is refunded twice/);
  assert.match((await p.textContent('#wf-refund-order .proof'))!, /Proof required.*test Tests for refund before capture/s);
  assert.ok(await p.$('#wf-payment-capture'), 'both selected workflows are shown');
  const spans = await p.$$eval('li.span', (els) => els.map((e) => ({ id: e.getAttribute('data-span-id'), loc: e.querySelector('.loc')!.textContent, sym: e.querySelector('.symbol')!.textContent, score: e.querySelector('.score')!.textContent, auth: e.querySelector('.badge.authority')!.textContent, reasons: [...e.querySelectorAll('.reasons li')].map((r) => r.textContent) })));
  assert.equal(spans.length, 8, 'the top 8 first');
  assert.equal(await p.$eval('#spans', (e) => e.compareDocumentPosition(document.querySelector('#wf-refund-order')!) & Node.DOCUMENT_POSITION_FOLLOWING ? 'spans first' : 'closure first'), 'spans first');
  await p.click('#show-all-spans');
  const all = await p.$$eval('li.span', (els) => els.map((e) => e.getAttribute('data-span-id')));
  assert.deepEqual(all, HEADS.map((s) => s.id), 'the whole ranking, in order, a later chunk under its answer');
  assert.equal(HEADS.length, FIXTURE.spans.length - 2, 'the fixture (the server\'s own packet) has two two-chunk symbols');
  // a declared span this search did not rank (no legs, score 0) shows no score, and says why
  const scores = await p.$$eval('li.span .score', (els) => els.map((e) => [e.textContent, e.getAttribute('title')]));
  assert.equal(HEADS[4]!.id, FIXTURE.spans[5]!.id);
  assert.equal(FIXTURE.spans[5]!.symbol, 'OrdersAdminPage');
  assert.deepEqual(scores[4], ['—', 'declared by the workflow graph; this search did not rank it']);
  assert.deepEqual(scores.map((x) => x[0] === '—'), HEADS.map((s) => s.score === 0 && !s.legs?.['lexical'] && !s.legs?.['dense']));
  assert.equal(scores.filter((x) => x[0] === '—').length, 3, 'three declared symbols the search did not find');
  assert.deepEqual(scores[0], ['1.87', 'score']);
  assert.deepEqual(scores[1], ['2.14', 'score'], 'a two-chunk symbol shows its best score once');
  assert.match((await p.getAttribute(`li.span[data-span-id="${FIXTURE.spans[5]!.id}"]`, 'aria-label'))!, /OrdersAdminPage, .*, not ranked by this search, declared\. Enter opens it\.$/);
  assert.equal(await p.$('#show-all-spans'), null);
  assert.deepEqual(spans[0], { id: '6f27eb477e9eef4d', loc: 'backend/inkwell/payments/refunds.py:23-38', sym: 'RefundPolicy.is_eligible', score: '1.87', auth: 'declared', reasons: FIXTURE.spans[0]!.reasons.slice(0, 6) });
  // a narrow panel breaks a path at its slashes and before the lines, not every few letters
  assert.equal(await p.$eval('li.span .loc', (e) => e.innerHTML), 'backend/<wbr>inkwell/<wbr>payments/<wbr>refunds.py<wbr><span class="lines">:23-38</span>');
  // ... and never inside the line range: at a width that fits `:23-38` only just, it is one line box
  await p.setViewportSize({ width: 150, height: 900 });
  assert.deepEqual(await p.$$eval('li.span .loc .lines', (els) => els.map((e) => e.getClientRects().length)), HEADS.map(() => 1));
  await p.setViewportSize({ width: 420, height: 900 });
  assert.deepEqual(await p.$$eval('li.span .badge.authority', (els) => els.map((e) => e.textContent)), HEADS.map((s) => s.authority));
  assert.equal((await p.textContent('#retrieval-state'))!.trim(), 'generation 1 · fresh · hybrid');
  assert.match((await p.textContent('#spans'))!, /Not in the packet: 21 more ranked spans past its span limit; 2 spans of the workflow graph's own YAML \(the workflow section shows it\)\./);
  // declared #1 at 1.87 above retrieved spans that score higher: the list says why
  assert.ok(FIXTURE.spans.some((s) => s.authority === 'retrieved' && s.score > FIXTURE.spans[0]!.score));
  assert.equal((await p.textContent('#spans-order'))!, ORDER_NOTE);
  await p.close();
});

test('clicking a span, Enter and Space on a focused span, the task box and the buttons post the right messages', async () => {
  const p = await open('light', state(FIXTURE));
  await p.click('li.span[data-span-id="892df37cc4c4d9db"]');
  assert.deepEqual((await posted(p)).at(-1), { type: 'openSpan', id: '892df37cc4c4d9db', file: 'backend/inkwell/payments/refunds.py', startLine: 56, endLine: 78 });
  const third = HEADS[2]!;
  await p.focus(`li.span[data-span-id="${third.id}"]`);
  await p.keyboard.press('Enter');
  assert.deepEqual((await posted(p)).at(-1), { type: 'openSpan', id: third.id, file: third.file, startLine: third.start_line, endLine: third.end_line });
  await p.keyboard.press('Tab');
  await p.keyboard.press(' ');
  assert.equal((await posted(p)).at(-1).id, HEADS[3]!.id, 'Tab moves to the next span, Space opens it');
  await p.fill('#task-input', 'Ship an order to a new address');
  await p.focus('#task-input');
  await p.keyboard.press('Enter');
  assert.deepEqual((await posted(p)).at(-1), { type: 'setTask', task: 'Ship an order to a new address' });
  await p.click('#copy-packet');
  assert.deepEqual((await posted(p)).at(-1), { type: 'copyPacket' });
  await p.click('#show-packet');
  assert.deepEqual((await posted(p)).at(-1), { type: 'showPacket' });
  await p.click('#wf-refund-order a.wf-link');
  assert.deepEqual((await posted(p)).at(-1), { type: 'showWorkflow', workflow: 'refund-order' });
  await p.close();
});

test('reveal (from a code lens) scrolls to the span, highlights and focuses it', async () => {
  const p = await open('dark', state(FIXTURE), { width: 420, height: 500 });
  const last = FIXTURE.spans.at(-1)!;
  assert.equal(await p.$(`li.span[data-span-id="${last.id}"]`), null, 'beyond the first 8 until revealed');
  await p.evaluate((id) => window.postMessage({ type: 'reveal', id }, '*'), last.id);
  await p.waitForSelector(`li.span.highlight[data-span-id="${last.id}"]`);
  assert.equal(await p.evaluate(() => document.activeElement?.getAttribute('data-span-id')), last.id);
  const box = await p.$eval(`li.span[data-span-id="${last.id}"]`, (e) => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom }; });
  assert.ok(box.top >= 0 && box.bottom <= 500, `the span is scrolled into view: ${JSON.stringify(box)}`);
  assert.equal(await p.$$eval('li.span.highlight', (e) => e.length), 1);
  // a new state keeps the highlight
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(FIXTURE));
  await p.waitForSelector(`li.span.highlight[data-span-id="${last.id}"]`);
  await p.close();
});

test('keyboard and ARIA: spans are buttons in the tab order with labels', async () => {
  const p = await open('dark', state(FIXTURE));
  const attrs = await p.$eval('li.span', (e) => ({ role: e.getAttribute('role'), tab: e.getAttribute('tabindex'), label: e.getAttribute('aria-label') }));
  assert.deepEqual(attrs, { role: 'button', tab: '0', label: 'Span 1: RefundPolicy.is_eligible, backend/inkwell/payments/refunds.py:23-38, score 1.87, declared. Enter opens it.' });
  assert.ok(await p.$('textarea#task-input[aria-label]'));
  for (const id of ['#set-task', '#clear-task', '#copy-packet', '#show-packet']) assert.ok(await p.$(`${id}[aria-label]`), id);
  assert.ok(await p.$('table.candidates[aria-label="Candidate workflows and scores"]'));
  await p.close();
});

test('CSP: the nonce script runs, an inline script without it does not, nothing remote loads; source text stays text', async () => {
  const evil: Packet = structuredClone(FIXTURE);
  evil.spans[0]!.reasons = ['<img src=x onerror="window.__xss=1">', ...evil.spans[0]!.reasons];
  evil.spans[0]!.symbol = '<script>window.__xss=2</script>';
  const p = await open('dark', state(evil));
  assert.equal(await p.evaluate(() => (window as any).__evil), undefined, 'the inline script without the nonce must not run');
  const violations: string[] = await p.evaluate(() => (window as any).__violations);
  assert.ok(violations.some((v) => v.startsWith('script-src')), `CSP reported the blocked inline script: ${violations}`);
  assert.equal(await p.evaluate(() => (window as any).__xss), undefined);
  assert.equal(await p.$eval('li.span .symbol', (e) => e.textContent), '<script>window.__xss=2</script>');
  assert.equal(await p.$$eval('li.span img', (e) => e.length), 0);
  const csp = await p.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.getAttribute('content'));
  assert.equal(csp, contentSecurityPolicy(origin, NONCE));
  assert.doesNotMatch(csp!, /unsafe-inline|unsafe-eval|\*/);
  const scripts = await p.$$eval('script', (els) => els.map((s) => ({ nonce: (s as HTMLScriptElement).nonce, src: s.getAttribute('src') })));
  assert.deepEqual(scripts.filter((s) => s.src).map((s) => s.nonce), [NONCE], 'the panel script carries the nonce');
  assert.ok(requests.length > 0 && requests.every((u) => u.startsWith(origin)), `only the page's own origin is requested: ${requests.filter((u) => !u.startsWith(origin))}`);
  await p.close();
});

test('empty, preparing, error and degraded states read clearly', async () => {
  const p = await open('dark', state(null, { folderCount: 0 }));
  // an empty window: open a folder first, and Set Task says why it is off
  assert.match((await p.textContent('#body'))!, /No folder is open\. Open one \(File > Open Folder\)/);
  assert.equal(await p.getAttribute('#set-task', 'title'), 'Needs a folder: open one (File > Open Folder), Lamina indexes it');
  assert.ok(await p.isDisabled('#set-task'));
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(null));
  await p.waitForFunction(() => /No task yet/.test(document.querySelector('#body')?.textContent ?? ''));
  assert.ok(!(await p.isDisabled('#set-task')));
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(null, { task: 'refund twice', packetState: 'preparing' }));
  await p.waitForSelector('.notice.busy');
  assert.equal(await p.inputValue('#task-input'), 'refund twice');
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(null, { packetState: 'error', error: { code: 'LAMINA_DENSE_UNAVAILABLE', message: 'the model is not loaded', remedy: 'python -m assets.install' } }));
  assert.equal((await p.textContent('.notice.error'))!, 'LAMINA_DENSE_UNAVAILABLE: the model is not loaded — python -m assets.install');
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(FIXTURE, { index: { folder: 'f', generation: 2, files: 1, chunks: 1, pending: 14, retrieval: 'hybrid_partial', freshness: 'fresh' } }));
  await p.waitForSelector('li.span');
  assert.equal((await p.textContent('#retrieval-state'))!.trim(), 'generation 2 · pending 14 · hybrid_partial');
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(FIXTURE, { index: { folder: 'f', generation: 2, files: 1, chunks: 1, pending: 0, retrieval: 'lexical_degraded', freshness: 'fresh' } }));
  await p.waitForSelector('#retrieval-state.warn');
  await p.close();
});

test('a packet built on the last valid graph says so above its selection', async () => {
  // an edit broke a workflow YAML: the server serves its last valid graph, and the panel read as current
  const broken: Packet = { ...FIXTURE, graph: { ...FIXTURE.graph, state: 'last_valid', problems: ['a', 'b'] } };
  const p = await open('dark', state(broken));
  assert.equal((await p.textContent('#graph-last-valid'))!.trim(), 'The workflow graph does not validate (2 problems, in the Problems view): this selection comes from its last valid version.');
  await p.close();
  const q = await open('dark', state(FIXTURE));
  assert.equal(await q.$('#graph-last-valid'), null);
  await q.close();
});

test('multi-root: the task label names the folder the panel shows; one folder: just "Task"', async () => {
  const p = await open('dark', state(FIXTURE, { folderCount: 2 }));
  assert.equal((await p.textContent('.task-label'))!.trim(), 'Task · shop');
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(null, { folder: 'file:///work/admin%20tools/', folderCount: 2 }));
  await p.waitForFunction(() => document.querySelector('.task-label')!.textContent!.includes('admin tools'));
  assert.match((await p.getAttribute('#task-input', 'aria-label'))!, /^Task for admin tools: /);
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(FIXTURE, { folderCount: 1 }));
  await p.waitForFunction(() => document.querySelector('.task-label')!.textContent === 'Task');
  await p.close();
});

test('no workflow graph, or no workflow scored: no empty candidates table, but where to add workflows', async () => {
  const packet: Packet = { ...FIXTURE, span_source: 'task', workflows: [], selection: { ...FIXTURE.selection, status: 'new_workflow_required', selected: [], candidates: [], reasons: ['no active workflows in the graph'] } };
  const p = await open('dark', state(packet));
  assert.equal(await p.$('table.candidates'), null, 'a table of headers only says nothing');
  assert.match((await p.textContent('#selection'))!, /No workflow to choose from: describe them in YAML under \.lamina\/workflows\//);
  // a folder whose graph defines no workflow: no verdict on the task, and said once, not four times
  const NOTE = 'the workflow graph defines no workflows (.lamina/workflows/ has none the graph loads): Lamina cannot tell which workflow this task belongs to';
  const empty: Packet = { ...packet, notes: [NOTE], selection: { ...packet.selection, reasons: ['the workflow graph defines no workflows: nothing to select from'] } };
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(empty));
  await p.waitForFunction(() => /No workflows defined/.test(document.querySelector('#outcome')?.textContent ?? ''));
  const body = (await p.textContent('#body'))!;
  assert.equal(body.split('workflow graph defines no workflows').length - 1, 0, body);
  assert.equal(body.split('No workflow to choose from').length - 1, 1, body);
  assert.doesNotMatch(body, /New workflow required|No workflow selected: plain retrieval/);
  // a graph none of whose workflows scored: no table of headers over no rows either
  const unscored: Packet = { ...packet, selection: { ...packet.selection, candidates: FIXTURE.selection.candidates.map((c) => ({ ...c, score: 0 })) } };
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(unscored));
  await p.waitForFunction(() => /None of the/.test(document.querySelector('#selection')?.textContent ?? ''));
  assert.equal(await p.$('table.candidates'), null);
  assert.match((await p.textContent('#selection'))!, new RegExp(`None of the ${FIXTURE.selection.candidates.length} workflows scored above 0 for this task\\.`));
  // a table's numeric header sits over its numbers
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(FIXTURE));
  await p.waitForSelector('table.candidates');
  assert.equal(await p.$eval('table.candidates th.num', (e) => getComputedStyle(e).textAlign), 'right');
  await p.close();
});

const send = (p: Page, st: PanelState): Promise<void> => p.evaluate((x) => window.postMessage({ type: 'state', state: x }, '*'), st);
const enabled = (p: Page, sel: string): Promise<boolean> => p.$eval(sel, (b) => !(b as HTMLButtonElement).disabled);

test('the server fails under a packet: "not running" with the error and the fix on top, the packet kept but marked stale, its server actions off; a new packet is normal again', async () => {
  const p = await open('dark', state(FIXTURE));
  assert.equal(await p.$('#server-state:not([hidden])'), null, 'a running server: nothing to say');
  assert.equal(await p.$('#stale-note'), null);
  const problem = "Lamina cannot start: Lamina is not installed for /usr/bin/python3: No module named 'lsp_server'. Set lamina.python to a Python that has Lamina, e.g. after bash scripts/setup.sh in /src/lamina its .venv/bin/python.";
  await send(p, state(FIXTURE, {
    server: 'failed', serverProblem: problem,
    serverActions: [{ kind: 'setupInstructions', title: 'Setup Instructions' }, { kind: 'choosePython', title: 'Choose Python' }, { kind: 'runSetup', title: 'Run Setup' }],
  }));
  await p.waitForFunction((t) => document.body.textContent!.includes(t), problem);
  // the defect: the last packet looked current and its buttons still acted on it
  assert.equal(await enabled(p, '#copy-packet'), false, 'Copy Packet must not hand an agent the packet of a server that is not running as if current');
  assert.ok(await p.$('#stale-note'), 'the packet says it is stale');
  // plainly, at the top of the panel (above the task box), the state, the error and what to do
  await p.waitForSelector('#server-state[role="alert"]', { state: 'visible' });
  assert.equal(await p.$eval('#root', (r) => r.firstElementChild!.id), 'server-state');
  assert.equal((await p.textContent('#server-state .server-title'))!, 'The Lamina server is not running.');
  assert.equal((await p.textContent('#server-state .server-text'))!, problem);
  assert.deepEqual(await p.$$eval('#server-state button', (bs) => bs.map((b) => b.textContent)), ['Setup Instructions', 'Choose Python', 'Run Setup', 'Restart Server', 'Show Output']);
  // the last packet stays (the user's context) but says it is stale, and looks it
  assert.match((await p.textContent('#stale-note'))!, /^stale Stale: from a Lamina server that is no longer running\. Nothing updates it and its lines may have moved; Set Task, Copy Packet, Show Packet and the workflow links are off until the server runs again \(it gets this task back then\)\.$/);
  assert.equal(await p.$$eval('li.span', (e) => e.length), 8);
  assert.equal(await p.$eval('#spans', (e) => [(e as HTMLElement).dataset['stale'], getComputedStyle(e).opacity].join(' ')), 'true 0.6');
  assert.equal((await p.textContent('#retrieval-state'))!.trim(), 'last known, from the server that stopped: generation 1 · fresh · hybrid');
  // what needs the server is off, and does nothing
  for (const id of ['#set-task', '#clear-task', '#copy-packet', '#show-packet']) assert.equal(await enabled(p, id), false, `${id} is disabled`);
  // and looks it, from the stylesheet (hovering does not light it up)
  await p.hover('#copy-packet');
  assert.deepEqual(await p.$eval('#copy-packet', (b) => [getComputedStyle(b).opacity, getComputedStyle(b).cursor, (b as HTMLElement).getAttribute('style')]), ['0.5', 'default', null]);
  assert.equal(await p.getAttribute('#copy-packet', 'title'), 'Needs the Lamina server running: see the message at the top of the panel');
  const before = (await posted(p)).length;
  await p.$eval('#copy-packet', (b) => (b as HTMLButtonElement).click());
  await p.$eval('#show-packet', (b) => (b as HTMLButtonElement).click());
  await p.click('#wf-refund-order a.wf-link');
  await p.fill('#task-input', 'Ship an order to a new address');
  await p.focus('#task-input');
  await p.keyboard.press('Enter');
  assert.deepEqual((await posted(p)).slice(before), [], 'no copy, show, workflow link or task goes to a server that is not running');
  assert.equal(await p.getAttribute('#wf-refund-order a.wf-link', 'aria-disabled'), 'true');
  // the banner's actions post to the extension
  await p.click('#server-state button:has-text("Restart Server")');
  await p.click('#server-state button:has-text("Run Setup")');
  assert.deepEqual((await posted(p)).slice(before), [{ type: 'serverAction', kind: 'restartServer' }, { type: 'serverAction', kind: 'runSetup' }]);
  await p.screenshot({ path: path.join(ARTIFACTS, 'panel-server-not-running.png'), fullPage: false });

  // Restart Server: starting, the packet still the old server's; a task may be typed (it is sent once it runs)
  await send(p, state(FIXTURE, { server: 'starting' }));
  await p.waitForSelector('#server-state[role="status"]');
  assert.equal((await p.textContent('#server-state .server-title'))!, 'Restarting the Lamina server…');
  assert.match((await p.textContent('#stale-note'))!, /Stale: from the server that stopped, not the one starting/);
  assert.equal(await enabled(p, '#set-task'), true);
  assert.equal(await enabled(p, '#copy-packet'), false);

  // it runs and a new packet arrives: normal again
  await send(p, state(FIXTURE));
  await p.waitForSelector('#server-state', { state: 'hidden' });
  assert.equal(await p.$('#stale-note'), null);
  assert.equal(await p.$eval('#spans', (e) => (e as HTMLElement).dataset['stale'] ?? 'live'), 'live');
  assert.equal((await p.textContent('#retrieval-state'))!.trim(), 'generation 1 · fresh · hybrid');
  for (const id of ['#set-task', '#clear-task', '#copy-packet', '#show-packet']) assert.equal(await enabled(p, id), true, `${id} is enabled again`);
  await p.click('#copy-packet');
  assert.deepEqual((await posted(p)).at(-1), { type: 'copyPacket' });
  const violations: string[] = await p.evaluate(() => (window as any).__violations);
  assert.deepEqual(violations.filter((v) => !v.startsWith('script-src')), [], 'the stale look goes through the CSSOM: no style-src violation');
  await p.close();
});

test('the server process died while a packet was being prepared: not "Preparing…" as if under way, but stopped, with Restart Server', async () => {
  const p = await open('light', state(null, { task: 'Refund twice', packetState: 'preparing' }));
  assert.match((await p.textContent('#body'))!, /Preparing the packet for: Refund twice/);
  await send(p, state(null, { task: 'Refund twice', packetState: 'preparing', server: 'stopped', serverProblem: 'The Lamina server stopped unexpectedly; restarting it (restart 1 of 3 within 3 minutes).', serverActions: [{ kind: 'showOutput', title: 'Show Output' }] }));
  await p.waitForFunction(() => document.body.textContent!.includes('The Lamina server is not running') || document.body.textContent!.includes('stopped'), null, { timeout: 2000 }).catch(() => undefined);
  assert.doesNotMatch((await p.textContent('#body'))!, /Preparing the packet for/, 'nothing is being prepared: the server is gone');
  await p.waitForSelector('#server-state[role="alert"]', { state: 'visible' });
  assert.equal(await p.$eval('#server-state', (e) => e.className), 'notice server-state warn');
  assert.match((await p.textContent('#server-state'))!, /^The Lamina server is not running\.The Lamina server stopped unexpectedly; restarting it/);
  assert.deepEqual(await p.$$eval('#server-state button', (bs) => bs.map((b) => b.textContent)), ['Show Output', 'Restart Server']);
  assert.doesNotMatch((await p.textContent('#body'))!, /Preparing the packet for/);
  assert.match((await p.textContent('#body'))!, /The packet for “Refund twice” was being prepared when the server stopped; it is prepared again once a server runs\./);
  assert.equal(await enabled(p, '#set-task'), false);
  // nothing held and no server: the empty panel does not invite a task it cannot take
  await send(p, state(null, { server: 'failed', serverProblem: 'Lamina cannot start: x.', index: null }));
  await p.waitForFunction(() => /a task can be set once the Lamina server runs/.test(document.querySelector('#body')!.textContent!));
  assert.equal(await p.$('#stale-note'), null, 'nothing stale to mark');
  assert.equal((await p.textContent('#retrieval-state'))!.trim(), 'no index state yet');
  await p.close();
});

test('theme variables colour everything: light, dark and high-contrast screenshots', async () => {
  const colours: Record<string, { fg: string; bg: string; button: string }> = {};
  for (const theme of ['light', 'dark', 'high-contrast']) {
    const p = await open(theme, state(FIXTURE), { width: 420, height: 1400 });
    await p.evaluate((id) => window.postMessage({ type: 'reveal', id }, '*'), FIXTURE.spans[1]!.id);
    await p.evaluate(() => window.scrollTo(0, 0));
    colours[theme] = await p.evaluate(() => {
      const cs = (sel: string) => getComputedStyle(document.querySelector(sel)!);
      return { fg: cs('body').color, bg: cs('body').backgroundColor, button: cs('#copy-packet').backgroundColor };
    });
    await p.screenshot({ path: path.join(ARTIFACTS, `panel-${theme}.png`) });
    await p.close();
  }
  assert.deepEqual(colours['light'], { fg: 'rgb(59, 59, 59)', bg: 'rgb(248, 248, 248)', button: 'rgb(0, 95, 184)' });
  assert.deepEqual(colours['dark'], { fg: 'rgb(204, 204, 204)', bg: 'rgb(24, 24, 24)', button: 'rgb(0, 120, 212)' });
  assert.deepEqual(colours['high-contrast'], { fg: 'rgb(255, 255, 255)', bg: 'rgb(0, 0, 0)', button: 'rgb(0, 0, 0)' });
  // no literal colour in the stylesheet: every colour is a theme variable
  const css = readFileSync(path.join(ROOT, 'media/panel.css'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  assert.doesNotMatch(css, /#[0-9a-fA-F]{3,8}\b|rgba?\(|hsla?\(|(?<![-\w])(?:white|black|red|green|blue|gray|grey)(?![-\w])/);
});
