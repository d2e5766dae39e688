/**
 * A declared symbol longer than one chunk (the server's `_continued`: the later chunks carry
 * `continues`, the first chunk's id, and say so in a reason) is one entry of the panel's span
 * list, not one rank per chunk. In headless Chromium, like panel.test.ts, from a copy of the fixture.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import pw from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { panelHtml } from '../../src/panel/html';
import type { PanelState } from '../../src/panel/messages';
import type { Packet, Span } from '../../src/protocol';
import { THEMES } from './themes';

const ROOT = process.cwd();
const FIXTURE: Packet = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/packet.json'), 'utf8'));
const NONCE = 'testNonce0123456789abcdefABCDEF1';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHIM = `window.__posted = [];
window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), setState() {}, getState() { return undefined; } });`;

let server: http.Server;
let origin = '';
let browser: Browser;

before(async () => {
  assert.ok(existsSync(path.join(ROOT, 'dist/panel.js')), 'dist/panel.js: run `node esbuild.mjs` first');
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const send = (type: string, body: string | Buffer): void => { res.writeHead(200, { 'content-type': type }); res.end(body); };
    if (url.pathname === '/') {
      const html = panelHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/dist/panel.js`, styleUri: `${origin}/media/panel.css` });
      return send('text/html', html
        .replace('</head>', `<link rel="stylesheet" href="${origin}/theme/dark.css">\n</head>`)
        .replace('<main id="root"', `<script nonce="${NONCE}">${SHIM}</script>\n<main id="root"`));
    }
    if (url.pathname === '/dist/panel.js') return send('text/javascript', readFileSync(path.join(ROOT, 'dist/panel.js')));
    if (url.pathname === '/media/panel.css') return send('text/css', readFileSync(path.join(ROOT, 'media/panel.css')));
    if (url.pathname === '/theme/dark.css') return send('text/css', `html { ${THEMES['dark']!.join('; ')}; }`);
    res.writeHead(404); res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  browser = await pw.chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
});

after(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

function state(packet: Packet): PanelState {
  return {
    folder: 'file:///work/shop', task: packet.task, packetState: 'ready', packet, error: null, server: 'running',
    index: { folder: 'file:///work/shop', generation: 1, files: 61, chunks: 402, pending: 0, retrieval: 'hybrid', freshness: 'fresh' },
  };
}

async function open(packet: Packet, viewport = { width: 420, height: 900 }): Promise<Page> {
  const p = await browser.newPage({ viewport });
  p.on('pageerror', (e) => { throw e; });
  await p.goto(`${origin}/`);
  await p.waitForFunction(() => (window as any).__posted?.some((m: any) => m.type === 'ready'));
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(packet));
  await p.waitForSelector('li.span');
  return p;
}

interface Row { ids: string | null; id: string | null; rank: string; loc: string; sym: string; chunks: string | null; stale: boolean; label: string | null }
const rows = (p: Page): Promise<Row[]> => p.$$eval('li.span', (els) => els.map((e) => ({
  ids: e.getAttribute('data-span-ids'), id: e.getAttribute('data-span-id'),
  rank: e.querySelector('.rank')!.textContent!, loc: e.querySelector('.loc')!.textContent!, sym: e.querySelector('.symbol')!.textContent!,
  chunks: e.querySelector('.chunks')?.textContent ?? null, stale: !!e.querySelector('.badge.warn'), label: e.getAttribute('aria-label'),
})));
const posted = (p: Page): Promise<any[]> => p.evaluate(() => (window as any).__posted);

/** Make `spans[later]` the server's second chunk of `spans[first]`: same file and symbol, best score, `continues` and the reason at index 1. */
function continueChunk(packet: Packet, first: number, later: number, lines?: [number, number]): Span {
  const a = packet.spans[first]!;
  const b = packet.spans[later]!;
  b.file = a.file;
  b.symbol = a.symbol;
  if (lines) [b.start_line, b.end_line] = lines;
  a.score = b.score = Math.max(a.score, b.score);
  b.reasons.splice(1, 0, `continues ${a.symbol} from lines ${a.start_line}-${a.end_line} (one symbol, 2 chunks)`);
  b.continues = a.id;
  return b;
}

// The fixture is a packet as the server writes it: spans[1] is RefundService.refund_order 56-78 and
// spans[2] its second chunk, 76-88 (`continues` spans[1]); spans[5] and spans[6] are the two chunks of
// OrdersAdminPage. Each symbol is one entry.
function twoChunkPacket(): Packet {
  const packet: Packet = structuredClone(FIXTURE);
  assert.equal(packet.spans[2]!.continues, packet.spans[1]!.id);
  assert.equal(packet.spans[6]!.continues, packet.spans[5]!.id);
  return packet;
}

test('a declared two-chunk symbol is one entry: combined range, "2 chunks", one rank, later ranks renumbered', async () => {
  const packet = twoChunkPacket();
  const [head, second] = [packet.spans[1]!, packet.spans[2]!];
  const p = await open(packet);
  const shown = await rows(p);
  assert.equal(shown.length, 8, 'still 8 entries before "Show all"');
  const folded = shown.filter((r) => r.sym === 'RefundService.refund_order');
  assert.equal(folded.length, 1, 'one entry for the symbol');
  assert.deepEqual(folded[0], {
    ids: `${head.id} ${second.id}`, id: head.id, rank: '#2', loc: 'backend/inkwell/payments/refunds.py:56-88', sym: 'RefundService.refund_order', chunks: '2 chunks', stale: false,
    label: 'Span 2: RefundService.refund_order, backend/inkwell/payments/refunds.py:56-88, 2 chunks, score 2.14, declared. Enter opens it.',
  });
  assert.deepEqual(shown.map((r) => r.rank), ['#1', '#2', '#3', '#4', '#5', '#6', '#7', '#8'], 'ranks without gaps');
  assert.equal(shown[2]!.id, packet.spans[3]!.id, 'the span after the symbol is #3');
  assert.equal(shown[2]!.loc, 'backend/inkwell/payments/gateway.py:84-93');
  assert.equal(shown[4]!.sym, 'OrdersAdminPage', 'the other two-chunk symbol is #5');
  assert.equal(shown[4]!.ids, `${packet.spans[5]!.id} ${packet.spans[6]!.id}`);
  assert.equal(shown[7]!.id, packet.spans[9]!.id, 'the 8th entry is the 10th span');
  assert.equal(shown.filter((r) => r.chunks !== null).length, 2, 'only the folded entries say chunks');
  assert.equal((await p.textContent('#spans-h'))!, `Ranked spans (${packet.spans.length - 2})`);
  assert.equal((await p.textContent('#show-all-spans'))!, `Show all ${packet.spans.length - 2} spans`);
  assert.equal(await p.getAttribute('#show-all-spans', 'aria-label'), `Show the other ${packet.spans.length - 2 - 8} ranked spans`);

  // it opens the first chunk, by click and by Enter, with the same message as any span
  await p.click(`li.span[data-span-id="${head.id}"]`);
  const opened = { type: 'openSpan', id: head.id, file: head.file, startLine: 56, endLine: 78 };
  assert.deepEqual((await posted(p)).at(-1), opened);
  await p.focus(`li.span[data-span-id="${head.id}"]`);
  await p.keyboard.press('Enter');
  assert.deepEqual((await posted(p)).at(-1), opened);

  // the second chunk's id (a lens on lines 76-88) highlights and focuses the entry
  await p.evaluate((id) => window.postMessage({ type: 'reveal', id }, '*'), second.id);
  await p.waitForSelector(`li.span.highlight[data-span-id="${head.id}"]`);
  assert.equal(await p.$$eval('li.span.highlight', (e) => e.length), 1);
  assert.equal(await p.evaluate(() => document.activeElement?.getAttribute('data-span-id')), head.id);
  assert.ok(await p.$('#show-all-spans'), 'a chunk of a shown entry does not expand the list');
  // a new state keeps the highlight on the entry
  await p.evaluate((st) => window.postMessage({ type: 'state', state: st }, '*'), state(packet));
  await p.waitForSelector(`li.span.highlight[data-span-id="${head.id}"]`);

  await p.click('#show-all-spans');
  const all = await rows(p);
  assert.equal(all.length, packet.spans.length - 2);
  assert.deepEqual(all.map((r) => r.rank), all.map((_, i) => `#${i + 1}`));
  assert.deepEqual(all.flatMap((r) => r.ids!.split(' ')), packet.spans.map((s) => s.id), 'every span is in exactly one entry, in order');
  await p.close();
});

test('a stale chunk marks the entry stale; a fold at the cut-off is never split', async () => {
  const stale = twoChunkPacket();
  stale.spans[2]!.stale = true;
  let p = await open(stale);
  const entry = (await rows(p)).find((r) => r.sym === 'RefundService.refund_order')!;
  assert.equal(entry.stale, true);
  assert.equal(entry.chunks, '2 chunks');
  await p.close();

  // spans[9] (the 8th entry) and spans[10]: one symbol straddling FIRST_SPANS
  const packet: Packet = structuredClone(FIXTURE);
  const second = continueChunk(packet, 9, 10, [69, 80]);
  p = await open(packet);
  const shown = await rows(p);
  assert.equal(shown.length, 8);
  assert.deepEqual([shown[7]!.rank, shown[7]!.loc, shown[7]!.chunks, shown[7]!.ids], ['#8', 'backend/inkwell/inventory/stock.py:68-80', '2 chunks', `${packet.spans[9]!.id} ${second.id}`]);
  assert.equal((await p.textContent('#show-all-spans'))!, `Show all ${packet.spans.length - 3} spans`);
  // revealing a chunk of a hidden entry expands the list
  const last = packet.spans.at(-1)!;
  await p.evaluate((id) => window.postMessage({ type: 'reveal', id }, '*'), last.id);
  await p.waitForSelector(`li.span.highlight[data-span-id="${last.id}"]`);
  assert.equal(await p.$('#show-all-spans'), null);
  await p.close();
});

test('overlapping chunks of one symbol without `continues`, its words alone, or a first chunk left out, are not folded', async () => {
  const packet: Packet = structuredClone(FIXTURE);
  for (const s of packet.spans) delete s.continues; // as a packet/5 server wrote it: the reason's words alone
  const base = FIXTURE.spans.length;
  const extra = (id: string, symbol: string, start: number, end: number, reasons: string[], continues?: string): Span =>
    ({ id, file: 'backend/inkwell/payments/ledger.py', symbol, kind: 'function', start_line: start, end_line: end, score: 1.5, reasons, authority: 'retrieved', ...(continues ? { continues } : {}) });
  packet.spans.push(
    // overlapping retrieved chunks of one symbol, adjacent
    extra('aaaa000000000001', 'Ledger.post', 10, 40, ['bm25 symbol: ledger']),
    extra('aaaa000000000002', 'Ledger.post', 38, 60, ['bm25 body: ledger']),
    // the reason's words without the field (a packet/5 server said it only in words)
    extra('aaaa000000000003', 'Ledger.post', 58, 80, ['bm25 body: ledger', 'continues Ledger.post from lines 10-40 (one symbol, 2 chunks)']),
    // its first chunk is not in the packet (excluded by the agent): an entry of its own
    extra('aaaa000000000004', 'Ledger.close', 90, 99, ['declared: x'], 'bbbb000000000009'),
  );
  const p = await open(packet);
  await p.click('#show-all-spans');
  const all = await rows(p);
  assert.equal(all.length, base + 4, 'one entry per span');
  assert.equal((await p.textContent('#spans-h'))!, `Ranked spans (${base + 4})`);
  assert.deepEqual(all.map((r) => r.ids), packet.spans.map((s) => s.id));
  assert.equal(all.filter((r) => r.chunks !== null).length, 0);
  assert.deepEqual(all.slice(1, 3).map((r) => r.loc), ['backend/inkwell/payments/refunds.py:56-78', 'backend/inkwell/payments/refunds.py:76-88']);
  assert.deepEqual(all.slice(1, 4).map((r) => r.rank), ['#2', '#3', '#4']);
  await p.close();
});

test('in a narrow side bar the folded entry\'s symbol and badges wrap inside its row, none cut off', async () => {
  const packet = twoChunkPacket();
  const p = await open(packet, { width: 300, height: 900 });
  const head = packet.spans[1]!;
  const outside = await p.$eval(`li.span[data-span-id="${head.id}"]`, (li) => {
    const box = li.getBoundingClientRect();
    return [...li.querySelectorAll('.span-sub > *')]
      .filter((e) => { const r = e.getBoundingClientRect(); return r.right > box.right + 0.5 || r.left < box.left - 0.5; })
      .map((e) => e.textContent);
  });
  assert.deepEqual(outside, [], 'every part of the row within it');
  assert.equal(await p.$eval(`li.span[data-span-id="${head.id}"] .chunks`, (e) => e.textContent), '2 chunks');
  await p.close();
});
