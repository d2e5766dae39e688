import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choosePython, checkImportable, setupCheckout, SERVE_ARGS, IMPORT_CHECK_ARGS, type Runner } from '../../src/logic/python';
import { noticeFromDegraded, noticeFromServerMessage, noticeFromRequestError, noticeFromStartFailure, NoticeGate, oneLine, crashNotice } from '../../src/logic/serverMessages';
import { LibraryRestarts, type ClientState } from '../../src/logic/lifecycle';
import { statusView, retrievalLine, ProgressBoard } from '../../src/logic/status';
import { PREVIEW_KEEPALIVE_MS, keepaliveTick, previewedName } from '../../src/logic/previewKeepalive';
import { readSettings, initializationOptions, runtimeSettings, DEFAULTS, RESTART_KEYS } from '../../src/logic/settings';
import { debounce } from '../../src/logic/debounce';
import { StaticDocs, KEEP_STATIC_DOCS, RELEASED_TEXT } from '../../src/logic/staticDocs';
import { Store } from '../../src/logic/store';
import type { IndexState } from '../../src/protocol';

test('python: the setting wins, then the Python extension, then python3 on PATH', () => {
  assert.deepEqual(choosePython('/venv/bin/python', '/ext/python'), { command: '/venv/bin/python', source: 'setting' });
  assert.deepEqual(choosePython('  ', '/ext/python'), { command: '/ext/python', source: 'python-extension' });
  assert.deepEqual(choosePython(undefined, undefined), { command: 'python3', source: 'path' });
  assert.ok(SERVE_ARGS.join(' ').includes('main(["serve"])'));
});

test('python: the import check tells a missing interpreter from a missing Lamina', async () => {
  const calls: string[][] = [];
  const run = (r: Awaited<ReturnType<Runner>>): Runner => async (cmd, args) => { calls.push([cmd, ...args]); return r; };
  const py = { command: '/x/python', source: 'setting' as const };
  assert.deepEqual(await checkImportable(py, run({ code: 0, stdout: '/src/lsp_server/__init__.py\n', stderr: '' })), { ok: true, location: '/src/lsp_server/__init__.py' });
  assert.deepEqual(calls[0], ['/x/python', ...IMPORT_CHECK_ARGS]);
  const missing = await checkImportable(py, run({ code: null, stdout: '', stderr: '', error: 'ENOENT: spawn /x/python ENOENT' }));
  assert.equal(missing.ok, false);
  assert.equal(!missing.ok && missing.reason, 'python-missing');
  const noLamina = await checkImportable(py, run({ code: 1, stdout: '', stderr: 'Traceback (most recent call last):\n  File "<string>", line 1\nModuleNotFoundError: No module named \'lsp_server\'\n' }));
  assert.equal(!noLamina.ok && noLamina.reason, 'lamina-missing');
  assert.match(!noLamina.ok ? noLamina.detail : '', /No module named 'lsp_server'/);
  assert.doesNotMatch(!noLamina.ok ? noLamina.detail : '', /Traceback/);
});

test('server messages: each startup code gets its action, GRAPH_INVALID points at the YAML line', () => {
  const integ = noticeFromServerMessage(1, 'LAMINA_RETRIEVAL_INTEGRITY: model file sha256 mismatch (run: python -m assets.install)');
  assert.equal(integ.code, 'LAMINA_RETRIEVAL_INTEGRITY');
  assert.equal(integ.severity, 'error');
  assert.deepEqual(integ.actions.map((a) => a.kind), ['reinstallModel', 'setupInstructions']);
  const locked = noticeFromServerMessage(2, 'LAMINA_INDEX_LOCKED: pid 42 writes the index. Lamina runs read-only');
  assert.equal(locked.severity, 'warning');
  assert.deepEqual(locked.actions.map((a) => a.kind), ['contextStatus', 'restartServer']);
  const graph = noticeFromServerMessage(1, 'LAMINA_GRAPH_INVALID: .lamina/workflows/20-orders.yaml:17: operation refund has no actor (fix the YAML)');
  assert.equal(graph.file, '.lamina/workflows/20-orders.yaml');
  assert.equal(graph.line, 17);
  assert.equal(graph.actions[0]!.kind, 'openYaml');
  const graphNoLine = noticeFromServerMessage(1, 'LAMINA_GRAPH_INVALID: the workflow graph does not validate');
  assert.deepEqual(graphNoLine.actions.map((a) => a.kind), ['showProblems']);
  assert.equal(noticeFromServerMessage(3, 'Lamina: indexing').code, null);
});

test('server messages: a refusal shows code, message and remedy, never a traceback', () => {
  const n = noticeFromRequestError({ message: 'refused', code: -32001, data: { code: 'LAMINA_WORKFLOW_NOT_FOUND', message: "no workflow 'x'", remedy: 'pass a workflow id' } }, 'Lamina: Show Workflow');
  assert.equal(n.text, "LAMINA_WORKFLOW_NOT_FOUND: no workflow 'x' — pass a workflow id");
  const missing = noticeFromRequestError({ message: 'Unhandled method lamina/getPacket', code: -32601 }, 'Lamina: Copy Packet');
  assert.match(missing.text, /does not answer it yet/);
  const crash = noticeFromRequestError(new Error('Traceback (most recent call last):\n  File "x.py", line 3\nKeyError: 1'), 'Lamina: Search');
  assert.doesNotMatch(crash.text, /Traceback|File "x.py"/);
  assert.equal(oneLine('Traceback (most recent call last):\nValueError: boom'), 'ValueError: boom');
  const start = noticeFromStartFailure('lamina-missing', 'Lamina is not installed for python3', { setupDir: '/src/lamina' });
  assert.deepEqual(start.actions.map((a) => a.kind), ['setupInstructions', 'choosePython', 'runSetup']);
});

test('start failures say what to do; Run Setup only where a Lamina checkout can run scripts/setup.sh', () => {
  const detail = "Lamina is not installed for /usr/bin/python3 (setting lamina.python): ModuleNotFoundError: No module named 'lsp_server'";
  const n = noticeFromStartFailure('lamina-missing', detail);
  // the fix, in words: which setting to change and to what
  assert.match(n.text, /^Lamina cannot start: Lamina is not installed for \/usr\/bin\/python3 .*No module named 'lsp_server'\. Set lamina\.python to a Python that has Lamina/);
  assert.equal(n.text.match(/not installed/g)?.length, 1, `said once: ${n.text}`);
  // no checkout known: `bash scripts/setup.sh` would run in the user's project and fail, so no Run Setup
  assert.deepEqual(n.actions.map((a) => a.kind), ['setupInstructions', 'choosePython']);
  const withCheckout = noticeFromStartFailure('python-missing', 'cannot run /x/python (setting lamina.python): ENOENT: spawn /x/python ENOENT', { setupDir: '/src/lamina' });
  assert.match(withCheckout.text, /Set lamina\.python to a Python that has Lamina.*bash scripts\/setup\.sh in \/src\/lamina/);
  assert.deepEqual(withCheckout.actions.map((a) => a.kind), ['setupInstructions', 'choosePython', 'runSetup']);
  assert.equal(withCheckout.dir, '/src/lamina', 'Run Setup runs in the checkout');
  // where a checkout is: the interpreter's venv's parent, a workspace folder that is one, the dev extension's parent
  const checkouts = new Set(['/src/lamina', '/w/lamina']);
  const exists = (p: string): boolean => [...checkouts].some((c) => p === `${c}/scripts/setup.sh` || p === `${c}/lsp_server`);
  assert.equal(setupCheckout('/src/lamina/.venv/bin/python', ['/w/shop'], '/home/u/.vscode/extensions/lamina.lamina-0.1.0', exists), '/src/lamina');
  assert.equal(setupCheckout('/usr/bin/python3', ['/w/shop', '/w/lamina'], '/home/u/.vscode/extensions/lamina.lamina-0.1.0', exists), '/w/lamina');
  assert.equal(setupCheckout('python3', ['/w/shop'], '/src/lamina/vscode-client', exists), '/src/lamina');
  assert.equal(setupCheckout('/usr/bin/python3', ['/w/shop'], '/home/u/.vscode/extensions/lamina.lamina-0.1.0', exists), undefined);
});

test('a crash the language client restarts by itself: the manager reports stopped, starting, then running, and says so once', () => {
  const w = new LibraryRestarts();
  // the manager's own start reports its phases itself
  assert.deepEqual(['starting', 'running'].map((s) => w.change(s as ClientState)), [undefined, undefined]);
  // the server process dies, CloseAction.Restart: Running -> Stopped -> Starting -> Running (nothing runs while stopped)
  assert.deepEqual(['stopped', 'starting', 'running'].map((s) => w.change(s as ClientState)), ['stopped', 'starting', 'running']);
  assert.deepEqual(['stopped', 'starting', 'running'].map((s) => w.change(s as ClientState)), ['stopped', 'starting', 'running'], 'every restart');
  const n = crashNotice(1, 3);
  assert.equal(n.severity, 'warning');
  assert.match(n.text, /The Lamina server stopped unexpectedly; restarting it \(restart 1 of 3 within 3 minutes\)\. The current task is set again once it runs/);
  assert.deepEqual(n.actions.map((a) => a.kind), ['showOutput']);
});

test('server messages: one notification per code per server start', () => {
  const g = new NoticeGate();
  const n = noticeFromServerMessage(2, 'LAMINA_INDEX_LOCKED: busy');
  assert.equal(g.admit(n), true);
  assert.equal(g.admit(noticeFromServerMessage(2, 'LAMINA_INDEX_LOCKED: still busy')), false);
  g.reset();
  assert.equal(g.admit(n), true);
  // the server's model message and a lexical_degraded state are one problem
  assert.equal(g.admit(noticeFromServerMessage(2, 'LAMINA_RETRIEVAL_INTEGRITY: model missing — reinstall')), true);
  assert.equal(g.admit(noticeFromDegraded('')), false);
});

const st = (o: Partial<IndexState>): IndexState => ({ folder: 'file:///w/shop', generation: 3, files: 40, chunks: 300, pending: 0, retrieval: 'hybrid', freshness: 'fresh', ...o });

test('status bar: indexing percentage, pending, degraded, fresh, failures', () => {
  assert.equal(statusView('running', [st({})], { title: 'Lamina: indexing shop', percentage: 42.4, active: true }).text, '$(sync~spin) Lamina: indexing 42%');
  assert.equal(statusView('running', [st({})], { title: 'Lamina: embedding requests', percentage: 3, active: true }).text, '$(sync~spin) Lamina: embedding 3%');
  // an empty window: not "waiting for index" forever; a click opens a folder
  const none = statusView('running', [], undefined, undefined, 0);
  assert.deepEqual([none.text, none.command], ['$(folder) Lamina: no folder', 'workbench.action.files.openFolder']);
  assert.equal(statusView('failed', [], undefined, 'no python', 0).text, '$(error) Lamina: not running');
  assert.equal(statusView('running', [st({ pending: 12, retrieval: 'hybrid_partial' })], undefined).text, '$(sync~spin) Lamina: pending 12');
  assert.equal(statusView('running', [st({ retrieval: 'lexical_degraded' })], undefined).text, '$(warning) Lamina: lexical_degraded');
  assert.equal(statusView('running', [st({})], undefined).text, '$(check) Lamina: fresh · gen 3');
  assert.equal(statusView('running', [st({}), st({ folder: 'file:///w/b', freshness: 'syncing' })], undefined).text, '$(sync~spin) Lamina: syncing');
  assert.equal(statusView('running', [st({ freshness: 'readonly' })], undefined).severity, 'warning');
  // a failed sync: the server says stale (it was shown as fresh), and a folder it could not open says why
  const stale = statusView('running', [st({ freshness: 'stale', last_error: 'LAMINA_WORKSPACE_INVALID: gone' })], undefined);
  assert.equal(stale.text, '$(warning) Lamina: stale');
  assert.match(stale.tooltip, /A sync failed.*LAMINA_WORKSPACE_INVALID: gone/);
  const unopened = statusView('running', [st({ freshness: 'no_index', generation: null, last_error: 'LAMINA_INDEX_IO: cannot create' })], undefined);
  assert.match(unopened.tooltip, /^No index: LAMINA_INDEX_IO: cannot create/);
  const failed = statusView('failed', [], undefined, 'Lamina cannot start: Lamina is not installed');
  assert.equal(failed.text, '$(error) Lamina: not running');
  assert.match(failed.tooltip, /not installed/);
  assert.match(statusView('running', [st({})], undefined).tooltip, /shop: generation 3 · fresh · hybrid · 40 files/);
  assert.equal(retrievalLine({ generation: 2, freshness: 'fresh', retrieval: 'hybrid_partial', pending: 5 }), 'generation 2 · pending 5 · hybrid_partial');
  // while the model loads: neither degraded nor plain fresh; said until the server says it is ready
  const loading = statusView('running', [st({ model: 'loading' })], undefined);
  assert.equal(loading.text, '$(sync~spin) Lamina: loading model');
  assert.match(loading.tooltip, /BM25 until it is ready[\s\S]*fresh · hybrid · 40 files · .* · model loading/);
  assert.equal(statusView('running', [st({ model: 'ready' })], undefined).text, '$(check) Lamina: fresh · gen 3');
  assert.equal(statusView('running', [st({ model: 'unavailable', retrieval: 'lexical_degraded' })], undefined).text, '$(warning) Lamina: lexical_degraded');
  assert.equal(retrievalLine({ generation: 2, freshness: 'fresh', retrieval: 'hybrid', model: 'loading' }), 'generation 2 · fresh · hybrid · model loading');
});

test('status bar: two folders building at once show the slower one\'s percentage, not whichever reported last', () => {
  const b = new ProgressBoard();
  b.begin('shop', 'Lamina: indexing shop', 'scanning', 5);
  b.begin('admin', 'Lamina: indexing admin', 'scanning', 5);
  const shown = [b.report('shop', 'chunking', 54), b.report('admin', 'chunking', 46), b.report('shop', 'lexical', 75), b.report('admin', 'chunking', 50)]
    .map((p) => statusView('running', [], p).text);
  assert.deepEqual(shown, ['$(sync~spin) Lamina: indexing 5%', '$(sync~spin) Lamina: indexing 46%', '$(sync~spin) Lamina: indexing 46%', '$(sync~spin) Lamina: indexing 50%']);
  assert.match(statusView('running', [], b.current()).tooltip, /^Lamina: indexing 2 folders — Lamina: indexing shop 75% \(lexical\); Lamina: indexing admin 50% \(chunking\)/);
  assert.equal(statusView('running', [], b.end('admin')).text, '$(sync~spin) Lamina: indexing 75%');
  assert.equal(b.end('shop'), undefined);
});

test('settings: initializationOptions per docs/lsp.md, executeCommands false, bad values clamped', () => {
  const s = readSettings((k) => ({ budget: 9000, packetMode: 'full', ignore: ['*.gen.ts', '', 3], topK: 0, indexDirectory: ' /tmp/idx ' } as Record<string, unknown>)[k] as never);
  assert.deepEqual(initializationOptions(s), { budget: 9000, mode: 'full', topK: 1, rankedLenses: true, executeCommands: false, indexDir: '/tmp/idx', ignore: ['*.gen.ts'] });
  assert.deepEqual(initializationOptions(DEFAULTS), { budget: 8000, mode: 'standard', topK: 10, rankedLenses: true, executeCommands: false });
  const bound = readSettings((k) => ({ historyMaxCommits: 5000.4, historyMaxYears: -2 } as Record<string, unknown>)[k] as never);
  assert.deepEqual(initializationOptions(bound), { budget: 8000, mode: 'standard', topK: 10, rankedLenses: true, executeCommands: false, historyMaxCommits: 5000, historyMaxYears: 0 });
  assert.equal(readSettings((k) => (k === 'historyMaxYears' ? 2.5 : undefined) as never).historyMaxYears, 2.5);
  assert.ok(RESTART_KEYS.includes('historyMaxCommits') && RESTART_KEYS.includes('historyMaxYears'));
  assert.deepEqual(runtimeSettings(readSettings((k) => (k === 'packetMode' ? 'bogus' : undefined) as never)), { lamina: { budget: 8000, mode: 'standard', topK: 10, rankedLenses: true } });
  // Show Packet's view is the client's own: validated, never sent to the server
  assert.equal(readSettings(() => undefined).packetView, 'preview');
  assert.equal(readSettings((k) => (k === 'packetView' ? 'source' : undefined) as never).packetView, 'source');
  assert.equal(readSettings((k) => (k === 'packetView' ? 'rendered' : undefined) as never).packetView, 'preview');
  assert.equal('packetView' in initializationOptions(readSettings((k) => (k === 'packetView' ? 'source' : undefined) as never)), false);
});

test('debounce: a burst of changes restarts once, with the last arguments', () => {
  const timers: { fn: () => void; id: number }[] = [];
  let next = 0;
  const fake = {
    set: ((fn: () => void) => { const id = ++next; timers.push({ fn, id }); return id; }) as unknown as typeof setTimeout,
    clear: ((id: number) => { const i = timers.findIndex((t) => t.id === id); if (i >= 0) timers.splice(i, 1); }) as unknown as typeof clearTimeout,
  };
  const seen: number[] = [];
  const d = debounce((n: number) => seen.push(n), 500, fake);
  d(1); d(2); d(3);
  assert.equal(timers.length, 1);
  assert.equal(d.pending(), true);
  timers.shift()!.fn();
  assert.deepEqual(seen, [3]);
  assert.equal(d.pending(), false);
});

test('store: a packet announced later wins over an older getPacket answer', () => {
  const s = new Store();
  s.taskSet('file:///w/shop/', 'refund twice');
  assert.equal(s.packetOf('file:///w/shop').state, 'preparing');
  assert.equal(s.packetChanged({ folder: 'file:///w/shop', packetId: 'p1', task: 'refund twice', state: 'ready' }), true);
  assert.equal(s.packetChanged({ folder: 'file:///w/shop', packetId: 'p2', task: 'refund twice', state: 'ready' }), true);
  assert.equal(s.packetFetched({ folder: 'file:///w/shop', packetId: 'p1', task: 'refund twice', state: 'ready', packet: { spans: [] } as never }), false);
  assert.equal(s.packetOf('file:///w/shop').packet, null);
  assert.equal(s.packetFetched({ folder: 'file:///w/shop', packetId: 'p2', task: 'refund twice', state: 'ready', packet: { spans: [] } as never }), true);
  assert.notEqual(s.packetOf('file:///w/shop').packet, null);
  s.packetChanged({ folder: 'file:///w/shop', packetId: null, task: '', state: 'cleared' });
  assert.equal(s.packetOf('file:///w/shop').packet, null);
  assert.equal(s.packetOf('file:///w/shop').state, 'cleared');
});

test('preview keepalive: a packet document stays open while a preview tab shows it, then is let go', () => {
  assert.ok(PREVIEW_KEEPALIVE_MS < 3 * 60_000);  // VS Code lets go of a document an extension opened after 3 minutes
  assert.equal(previewedName('[Preview] Lamina Packet.md'), 'Lamina Packet.md');
  assert.equal(previewedName('Lamina Packet.md'), 'Lamina Packet.md');
  const name = (u: string): string => decodeURIComponent(u.split('?')[0]!.split('/').pop()!);
  const shop = 'lamina-packet:/shop/Lamina%20Packet.md?file:///w/shop';
  const prepared = 'lamina-packet:/prepared-x.md?static';
  const shown = new Set(['Lamina Packet.md', 'README.md']);
  assert.deepEqual(keepaliveTick([shop, prepared], shown, name), { reopen: [shop], drop: [prepared] });
  assert.deepEqual(keepaliveTick([shop], new Set(), name), { reopen: [], drop: [shop] });
});

test('one-off documents: the newest are kept, and any a tab still shows; a released one says how to get it back', () => {
  assert.ok(KEEP_STATIC_DOCS >= 8);
  const docs = new StaticDocs(3);
  const uri = (i: number): string => `lamina-packet:/prepared-task-${i}.md?static`;
  const none = (): boolean => false;
  for (let i = 1; i <= 3; i++) assert.deepEqual(docs.put(uri(i), `packet ${i}`, none), []);
  // a fourth lets go of the oldest no tab shows: the first is still in a preview tab, so the second goes
  assert.deepEqual(docs.put(uri(4), 'packet 4', (u) => u === uri(1)), [uri(2)]);
  assert.equal(docs.size, 3);
  assert.equal(docs.text(uri(1)), 'packet 1');
  assert.equal(docs.text(uri(2)), RELEASED_TEXT);
  assert.match(RELEASED_TEXT, /Run the command/);
  // preparing a task again makes it the newest: the next one lets go of the third, not the first
  docs.put(uri(1), 'packet 1 again', none);
  assert.deepEqual(docs.put(uri(5), 'packet 5', none), [uri(3)]);
  assert.equal(docs.text(uri(1)), 'packet 1 again');
  // every document shown: none is let go, the bound waits for a tab to close
  assert.deepEqual(docs.put(uri(6), 'packet 6', () => true), []);
  assert.equal(docs.size, 4);
  assert.deepEqual(docs.put(uri(7), 'packet 7', none), [uri(4), uri(1)]);
  assert.equal(docs.size, 3);
});
