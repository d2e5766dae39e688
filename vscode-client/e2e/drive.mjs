// Drives code-server (VS Code 1.100.3) with the Lamina .vsix installed, through the UI only
// (palette, panel webview, editor, Problems view), against the real Lamina server.
// Env (set by e2e/run.sh): CS_URL, CS_PGID (code-server's process group: the server the crash step kills), WS_DIR, ARTIFACTS, SERVER_MISSING (JSON list of lamina/<name>
// requests the server lacks: the steps needing them are skipped, by name), DOCS_IMG, CHROMIUM.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import pw from 'playwright-core';

const CS_URL = process.env.CS_URL;
const WS = process.env.WS_DIR;
const ARTIFACTS = process.env.ARTIFACTS;
const MISSING = new Set(JSON.parse(process.env.SERVER_MISSING || '[]'));
// A probe, not run by CI: idle this many seconds with the packet preview open before the task is
// re-prepared (VS Code lets go of a document an extension opened after 3 minutes; 230 shows it).
const PREVIEW_IDLE_S = Number(process.env.PREVIEW_IDLE_S || 0);
const TASK = 'Refund a payment that was captured twice';
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
const log = (...a) => console.log(`[${secs()}s]`, ...a);
const results = [];
let failed = false;
let page;

async function step(name, needs, fn) {
  const lacking = needs.filter((n) => MISSING.has(n));
  if (failed) { results.push({ name, status: 'not run' }); return; }
  if (lacking.length) {
    const reason = `SKIPPED: the server on this branch lacks ${lacking.map((n) => `lamina/${n}`).join(', ')}`;
    results.push({ name, status: reason });
    log(`- ${name}: ${reason}`);
    return;
  }
  const s = Date.now();
  try {
    const detail = await fn();
    results.push({ name, status: 'ok', ms: Date.now() - s, detail });
    log(`✓ ${name}${detail ? ` — ${detail}` : ''} (${((Date.now() - s) / 1000).toFixed(1)}s)`);
  } catch (e) {
    failed = true;
    results.push({ name, status: 'FAILED', error: String(e?.message ?? e) });
    log(`✗ ${name}: ${e?.stack ?? e}`);
    await page?.screenshot({ path: path.join(ARTIFACTS, 'e2e-failure.png') }).catch(() => {});
    await page?.content().then((html) => fs.writeFileSync(path.join(ARTIFACTS, 'e2e-failure.html'), html)).catch(() => {});
  }
}

async function runCommand(title) {
  // code-server now and then drops the first F1 (focus still settling after a click), or closes
  // the palette again right after it opened (a CI run saw its input hidden before the fill):
  // open it again, by F1 then by its other binding, until the title is typed in, before giving up
  const input = page.locator('.quick-input-widget .quick-input-box input');
  const keys = ['F1', 'F1', 'Control+Shift+P', 'F1'];
  for (let i = 0; ; i++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press(keys[i]);
    const timeout = i === keys.length - 1 ? 15000 : 5000;
    try {
      await input.waitFor({ state: 'visible', timeout });
      await input.fill('>' + title, { timeout });
      break;
    } catch (e) {
      if (i === keys.length - 1) throw e;
      log(`  (the command palette did not open or closed again on ${keys[i]}; again)`);
    }
  }
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first().waitFor({ state: 'visible', timeout: 15000 });
  await page.keyboard.press('Enter');
}

async function until(what, fn, ms = 30000, every = 250) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await page.waitForTimeout(every);
  }
  throw new Error(`timeout (${ms} ms) waiting for ${what}${last ? `; last: ${String(last?.message ?? last).slice(0, 300)}` : ''}`);
}

/** The panel's content frame (webview views nest the content in an iframe inside iframe.webview). */
async function panelFrame() {
  return until('the Lamina panel webview', async () => {
    for (const f of page.frames()) {
      if (f === page.mainFrame()) continue;
      try { if (await f.$('#task-input')) return f; } catch { /* navigating */ }
    }
    return null;
  }, 30000);
}

/** The text of a rendered markdown preview (a webview's frame) that `re` matches, or null. */
async function renderedMarkdown(re) {
  for (const f of page.frames()) {
    if (f === page.mainFrame()) continue;
    try {
      const body = await f.$('.markdown-body, body.vscode-body');
      if (!body) continue;
      const text = await body.innerText();
      if (re.test(text)) return { frame: f, text };
    } catch { /* navigating */ }
  }
  return null;
}

/** Waits until a workflow YAML is active with the cursor on a line that `ok` accepts; returns `file:line: text`. */
async function yamlLineAtCursor(what, ok) {
  let last = '';
  return until(what, async () => {
    const tab = (await activeTab()) ?? '';
    if (!/\.ya?ml/.test(tab)) return null;
    const name = tab.split(',')[0].trim();
    const { line } = await cursor();
    const at = fs.readFileSync(path.join(WS, '.lamina/workflows', name), 'utf8').split('\n')[line - 1] ?? '';
    last = `${name}:${line}: ${at.trim()}`;
    return ok(at) ? last : null;
  }, 20000).catch((e) => { throw new Error(`${e.message}; cursor at ${last}`); });
}

const statusBar = () => page.locator('.part.statusbar').innerText();
async function cursor() {
  const t = await page.locator('.part.statusbar .statusbar-item', { hasText: /Ln \d+, Col \d+/ }).first().innerText();
  const m = /Ln (\d+), Col (\d+)/.exec(t);
  return { line: Number(m[1]), col: Number(m[2]) };
}
// the active group's active tab (a preview beside the editor is a second group with its own active tab)
const activeTab = async () => {
  const inActive = page.locator('.part.editor .editor-group-container.active .tabs-container .tab.active').first();
  if (await inActive.count()) return inActive.getAttribute('aria-label');
  return page.locator('.part.editor .tabs-container .tab.active').first().getAttribute('aria-label');
};
/** Go to File: opens the workspace file `name`. Types into the file picker, then picks the row whose
 * file name is `name` (a row of an earlier picker, such as a workflow's `20-orders.yaml:113`, also
 * holds the text), and waits for its tab. */
async function openFile(name) {
  await runCommand('Go to File...');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(name);
  const exact = new RegExp(`^\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`);
  const row = page.locator('.quick-input-widget .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: exact }) }).first();
  await row.waitFor({ state: 'visible', timeout: 15000 });
  await row.click();
  await until(`${name} active`, async () => (await activeTab())?.startsWith(name), 15000);
}
const editorText = () => page.locator('.part.editor .editor-instance .view-lines').first().innerText();

const browser = await pw.chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-dev-shm-usage'] });
try {
  const ctx = await browser.newContext({ viewport: { width: 1500, height: 1150 } });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CS_URL });
  page = await ctx.newPage();
  page.on('pageerror', (e) => log('pageerror:', e.message));

  await step('workbench loads with the Lamina activity-bar container', [], async () => {
    await page.goto(`${CS_URL}/?folder=${encodeURIComponent(WS)}`, { waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench .part.activitybar').waitFor({ timeout: 90000 });
    await page.locator('.part.activitybar .action-item a[aria-label^="Lamina"]').first().waitFor({ timeout: 90000 });
  });

  await step('status bar reaches "fresh" (lamina/indexState)', [], async () => {
    const seen = new Set();
    await until('Lamina: fresh in the status bar', async () => {
      const t = (await statusBar()).split('\n').find((l) => l.includes('Lamina')) ?? '';
      if (t) seen.add(t.trim());
      return /Lamina: fresh/.test(t);
    }, Number(process.env.FRESH_TIMEOUT_MS || 120000), 300).catch((e) => { throw new Error(`${e.message}; status bar showed: ${[...seen].join(' -> ')}`); });
    return [...seen].join(' -> ');
  });

  let panel;
  await step('Set Task from the palette (lamina/setTask)', ['setTask', 'getPacket'], async () => {
    await runCommand('Lamina: Set Task');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await page.locator('.quick-input-widget', { hasText: 'the task' }).waitFor({ state: 'visible', timeout: 15000 });
    await input.fill(TASK);
    await page.keyboard.press('Enter');
  });

  let spanPick;
  await step('the panel shows the selection and the ranked spans (lamina/packetChanged -> lamina/getPacket)', ['setTask', 'getPacket'], async () => {
    panel = await panelFrame();
    await panel.waitForSelector('li.span', { timeout: 60000 });
    const outcome = (await panel.textContent('#outcome')).trim();
    if (!/refund-order/.test(outcome)) throw new Error(`selection does not name refund-order: ${outcome}`);
    const spans = await panel.$$eval('li.span', (els) => els.map((e) => ({ id: e.getAttribute('data-span-id'), loc: e.querySelector('.loc').textContent, sym: e.querySelector('.symbol').textContent })));
    spanPick = spans.find((s) => s.sym === 'RefundService.refund_order') ?? spans[0];
    if (!spans.some((s) => s.loc.startsWith('backend/inkwell/payments/refunds.py'))) throw new Error(`no span in refunds.py: ${JSON.stringify(spans.slice(0, 5))}`);
    const ops = await panel.$$eval('ol.operations li strong', (els) => els.map((e) => e.textContent));
    const retrieval = (await panel.textContent('#retrieval-state')).trim();
    await page.locator('.part.sidebar').screenshot({ path: path.join(ARTIFACTS, 'e2e-panel.png') });
    if (process.env.DOCS_IMG) { fs.mkdirSync(path.dirname(process.env.DOCS_IMG), { recursive: true }); fs.copyFileSync(path.join(ARTIFACTS, 'e2e-panel.png'), process.env.DOCS_IMG); }
    return `${outcome}; ${spans.length} spans; ${ops.length} operations; ${retrieval}`;
  });

  await step('clicking a span opens the file at its line', ['setTask', 'getPacket'], async () => {
    await panel.click(`li.span[data-span-id="${spanPick.id}"]`);
    const want = Number(/:(\d+)/.exec(spanPick.loc)[1]);
    const file = path.basename(spanPick.loc.split(':')[0]);
    await until(`${file} active at line ${want}`, async () => (await activeTab())?.startsWith(file) && (await cursor()).line === want, 20000);
    return `${spanPick.loc} -> ${file} Ln ${want}`;
  });

  await step('a ranked-span code lens is visible in that editor', ['setTask', 'getPacket'], async () => {
    const lens = page.locator('.part.editor .codelens-decoration:visible', { hasText: /Lamina\s#\d+/ }).first();
    await lens.waitFor({ state: 'visible', timeout: 30000 });
    await page.locator('.part.editor').screenshot({ path: path.join(ARTIFACTS, 'e2e-editor-lenses.png') });
    return (await lens.innerText()).trim();
  });

  await step('clicking a ranked-span lens reveals that span in the panel (lamina.revealSpan -> lamina/revealSpan)', ['revealSpan', 'getPacket'], async () => {
    const lens = page.locator('.part.editor .codelens-decoration:visible a', { hasText: /Lamina\s#\d+/ }).last();
    const text = (await lens.innerText()).trim();
    const rank = /#(\d+)/.exec(text)[1];
    await lens.click();
    const got = await until(`span #${rank} highlighted in the panel`, async () => {
      const r = await panel.$eval('li.span.highlight .rank', (e) => e.textContent).catch(() => null);
      return r === `#${rank}` ? r : null;
    }, 15000);
    const start = Number(await panel.$eval('li.span.highlight .loc', (e) => /:(\d+)/.exec(e.textContent)[1]));
    await until(`the editor at line ${start}`, async () => (await cursor()).line === start, 15000);
    return `${text} -> panel ${got} highlighted, editor at its line ${start}`;
  });

  await step('lamina.rankedLenses off hides the ranked lenses without a restart (workspace/didChangeConfiguration)', [], async () => {
    const ranked = page.locator('.part.editor .codelens-decoration:visible a', { hasText: /Lamina\s#\d+/ });
    const wsSettings = path.join(WS, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(wsSettings), { recursive: true });
    fs.writeFileSync(wsSettings, JSON.stringify({ 'lamina.rankedLenses': false }, null, 2));
    await until('no ranked lens', async () => (await ranked.count()) === 0, 20000);
    const declared = await page.locator('.part.editor .codelens-decoration:visible a', { hasText: /implements\s/ }).count();
    fs.rmSync(wsSettings);
    await until('the ranked lenses back', async () => (await ranked.count()) > 0, 20000);
    return `ranked lenses hidden (${declared} declared lenses visible meanwhile), then shown again`;
  });

  await step('hover on the span shows its rank and reasons', ['setTask', 'getPacket'], async () => {
    // the cursor is on the span's first line: move onto its name and ask for the hover
    await page.locator('.part.editor .tab.active').first().click();
    await runCommand('Go to Line/Column...');
    await page.keyboard.type(String(Number(/:(\d+)/.exec(spanPick.loc)[1])));
    await page.keyboard.press('Enter');
    await page.keyboard.press('End');
    await page.keyboard.press('Home');
    await page.keyboard.press('Control+ArrowRight');
    await page.keyboard.press('Control+ArrowRight');
    await page.keyboard.press('Control+ArrowLeft');
    await runCommand('Show or Focus Hover');
    const hover = page.locator('.monaco-hover:not(.hidden)', { hasText: /#\d+|rank/i }).first();
    await hover.waitFor({ state: 'visible', timeout: 20000 });
    const text = (await hover.innerText()).replace(/\s+/g, ' ');
    if (!/reason|lexical|dense|declared|bm25/i.test(text)) throw new Error(`hover has no reasons: ${text.slice(0, 300)}`);
    await page.keyboard.press('Escape');
    return text.slice(0, 160);
  });

  await step('Show Packet opens the packet rendered beside the editor (markdown preview of lamina-packet:)', ['getPacket'], async () => {
    await runCommand('Lamina: Show Packet');
    await until('a preview tab of "Lamina Packet (shop).md"', async () => (await page.locator('.part.editor .tab', { hasText: /Preview.*Lamina Packet \(shop\)\.md/ }).count()) > 0, 20000);
    // rendered, not source: headings and code spans are elements, and no markdown escape shows
    const got = await until('the rendered packet with refund-order', async () => {
      const found = await renderedMarkdown(/Workflow refund-order/);
      if (!found) return null;
      const codes = await found.frame.$$eval('code', (els) => els.length);
      if (codes === 0) throw new Error('no code span rendered');
      if (/\\_|\\\*|\\</.test(found.text)) throw new Error(`an escape shows: ${found.text.slice(0, 200)}`);
      return `${found.text.split('\n')[0].slice(0, 60)} (${codes} code spans)`;
    }, 30000);
    await page.locator('.part.editor').screenshot({ path: path.join(ARTIFACTS, 'e2e-packet-preview.png') });
    // Show Packet again: the one preview, not a second column beside it
    const tabs = page.locator('.part.editor .tab', { hasText: /Preview.*Lamina Packet \(shop\)\.md/ });
    await runCommand('Lamina: Show Packet');
    await page.waitForTimeout(1500);
    await until('one preview of the packet after a second Show Packet', async () => (await tabs.count()) === 1, 15000);
    return `${got}; shown again: one preview`;
  });

  await step('Go to Relevant Workflow opens the YAML at the workflow (lamina/goToRelevantWorkflow)', ['goToRelevantWorkflow', 'setTask'], async () => {
    await page.locator('.part.editor .tab', { hasText: 'refunds.py' }).first().click();
    await runCommand('Lamina: Go to Relevant Workflow');
    // several workflows -> a quick pick; take the best
    await page.waitForTimeout(800);
    if (await page.locator('.quick-input-widget .monaco-list-row').first().isVisible().catch(() => false)) await page.keyboard.press('Enter');
    return yamlLineAtCursor('a workflow definition', (at) => /id:\s*[\w-]+/.test(at));
  });

  await step('Search Code… opens the picked span (lamina/search)', ['search'], async () => {
    await runCommand('Lamina: Search Code…');
    await page.locator('.quick-input-widget', { hasText: 'search code' }).waitFor({ state: 'visible', timeout: 15000 });
    await page.locator('.quick-input-widget .quick-input-box input').fill('restock returned books');
    await page.keyboard.press('Enter');
    const row = page.locator('.quick-input-widget .monaco-list-row').first();
    await row.waitFor({ state: 'visible', timeout: 30000 });
    const label = (await row.innerText()).replace(/\s+/g, ' ');
    const m = /([\w/.-]+\.\w+):(\d+)-(\d+)/.exec(label);
    await page.keyboard.press('Enter');
    await until(`${m[1]} at line ${m[2]}`, async () => (await activeTab())?.startsWith(path.basename(m[1])) && (await cursor()).line === Number(m[2]), 20000);
    return label.slice(0, 140);
  });

  await step('a declared-span code lens opens the operation it names (lamina.showWorkflow -> lamina/showWorkflow)', ['showWorkflow'], async () => {
    await openFile('refunds.py');
    const lens = page.locator('.part.editor .codelens-decoration:visible a', { hasText: /implements\s[\w-]+\/[\w-]+/ }).first();
    await lens.waitFor({ state: 'visible', timeout: 30000 });
    const text = (await lens.innerText()).trim();
    if (!fs.existsSync(path.join(ARTIFACTS, 'e2e-editor-lenses.png'))) await page.locator('.part.editor').screenshot({ path: path.join(ARTIFACTS, 'e2e-editor-lenses.png') });
    await lens.click();
    const [, wf, op] = /implements\s([\w-]+)\/([\w-]+)/.exec(text);
    const where = await yamlLineAtCursor(`the operation ${wf}/${op}`, (at) => new RegExp(`id:\\s*${op}\\s*$`).test(at));
    return `${text} -> ${where}`;
  });

  await step('Select Workflow… re-prepares the task with the picked workflow (lamina/listWorkflows, lamina/selectWorkflow)', ['listWorkflows', 'selectWorkflow', 'getPacket'], async () => {
    if (PREVIEW_IDLE_S > 0) { log(`  (idling ${PREVIEW_IDLE_S} s with the preview open)`); await page.waitForTimeout(PREVIEW_IDLE_S * 1000); }
    await runCommand('Lamina: Select Workflow…');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'account-login' }).first().waitFor({ state: 'visible', timeout: 15000 });
    await page.locator('.quick-input-widget .quick-input-box input').fill('ship-order');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'ship-order' }).first().waitFor({ state: 'visible', timeout: 15000 });
    await page.keyboard.press('Enter');
    const outcome = await until('the panel to show ship-order selected', async () => {
      const t = (await panel.textContent('#outcome').catch(() => '')) ?? '';
      return /Selected\s+ship-order/.test(t) ? t.trim() : null;
    }, 30000);
    // the packet preview opened by Show Packet follows the new packet by itself
    await until('the open packet preview to show ship-order', async () => renderedMarkdown(/Workflow ship-order/), 30000);
    return `${outcome}; the open preview followed`;
  });

  await step('Prepare Packet shows a one-off packet as markdown source with lamina.packetView "source" (lamina/prepare)', ['prepare'], async () => {
    const wsSettings = path.join(WS, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(wsSettings), { recursive: true });
    fs.writeFileSync(wsSettings, JSON.stringify({ 'lamina.packetView': 'source' }, null, 2));
    await page.waitForTimeout(1500);  // the configuration is read when the command runs: let the change land
    await runCommand('Lamina: Prepare Packet');
    await page.locator('.quick-input-widget', { hasText: 'one-off packet' }).waitFor({ state: 'visible', timeout: 15000 });
    await page.locator('.quick-input-widget .quick-input-box input').fill('Put returned books back in stock');
    await page.keyboard.press('Enter');
    await until('a prepared-….md tab', async () => (await page.locator('.part.editor .tab', { hasText: /^prepared-put-returned-books/ }).count()) > 0, 30000);
    const text = await until('the prepared markdown', async () => (await page.locator('.part.editor .editor-instance .view-lines').allInnerTexts()).find((t) => /Put\sreturned\sbooks\sback\sin\sstock/.test(t) && /lamina\.packet\/6/.test(t)), 15000);
    fs.rmSync(wsSettings);
    return text.split('\n').slice(0, 3).join(' | ').slice(0, 140);
  });

  await step('Copy Packet for Agent puts the packet JSON on the clipboard', ['getPacket'], async () => {
    await runCommand('Lamina: Copy Packet for Agent');
    await page.locator('.notifications-toasts .notification-list-item-message', { hasText: 'copied the packet' }).first().waitFor({ timeout: 15000 });
    const packet = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    if (packet.schema !== 'lamina.packet/6' || !packet.spans?.length) throw new Error(`clipboard is not a packet: ${JSON.stringify(packet).slice(0, 200)}`);
    return `${packet.schema}, ${packet.spans.length} spans, selection ${packet.selection.status} ${packet.selection.selected.join(',')}`;
  });

  await step('the server process dies: the client says so, restarts it, the status bar returns to fresh, the task (its picked workflow) is set again', ['setTask', 'getPacket', 'selectWorkflow'], async () => {
    // the `lamina serve` child of this run's code-server (its process group: e2e/run.sh starts it with setsid)
    const serverPids = () => execFileSync('ps', ['-eo', 'pid=,pgid=,args='], { encoding: 'utf8' }).split('\n')
      .map((l) => l.trim().split(/\s+/)).filter((f) => f[1] === process.env.CS_PGID && f.slice(2).join(' ').includes('lsp_server.cli'))
      .map((f) => Number(f[0]));
    const [pid] = serverPids();
    if (!pid) throw new Error(`no lamina serve process in process group ${process.env.CS_PGID}`);
    await runCommand('Notifications: Clear All Notifications');
    process.kill(pid, 'SIGKILL');
    const seen = new Set();
    const toast = page.locator('.notifications-toasts .notification-list-item-message', { hasText: 'stopped unexpectedly' }).first();
    await toast.waitFor({ timeout: 20000 });
    const said = (await toast.innerText()).trim();
    await until('"Lamina: fresh" after the restart, the panel showing ship-order selected again', async () => {
      const t = (await statusBar()).split('\n').find((l) => l.includes('Lamina')) ?? '';
      if (t) seen.add(t.trim());
      const outcome = (await panel.textContent('#outcome').catch(() => '')) ?? '';
      return seen.has('Lamina: starting') && /Lamina: fresh/.test(t) && /Selected\s+ship-order/.test(outcome) && (await panel.$$('li.span')).length > 0;
    }, 90000, 200).catch((e) => { throw new Error(`${e.message}; status bar showed: ${[...seen].join(' -> ')}`); });
    // the new server has the task: its packet is there to copy (a server without it says "set a task first")
    await runCommand('Lamina: Copy Packet for Agent');
    await page.locator('.notifications-toasts .notification-list-item-message', { hasText: 'copied the packet' }).first().waitFor({ timeout: 30000 });
    const packet = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    if (packet.selection.selected.join(',') !== 'ship-order') throw new Error(`the restarted server's packet selects ${packet.selection.selected}`);
    const now = serverPids();
    if (now.includes(pid) || now.length !== 1) throw new Error(`server processes after the restart: ${now} (killed ${pid})`);
    await runCommand('Notifications: Clear All Notifications');
    return `killed ${pid} -> ${now[0]}; "${said.slice(0, 90)}…"; status ${[...seen].join(' -> ')}`;
  });

  await step('clicking the status-bar item shows Context Status (lamina/contextStatus)', ['contextStatus'], async () => {
    await page.keyboard.press('Escape');
    await page.locator('.part.statusbar .statusbar-item', { hasText: 'Lamina: fresh' }).first().click();
    const toast = page.locator('.notifications-toasts .notification-list-item-message', { hasText: /Lamina \(shop\): generation \d+/ }).first();
    await toast.waitFor({ timeout: 15000 });
    const said = (await toast.innerText()).trim();
    // Show Details: the CLI's status lines and the server's, not raw JSON
    await page.locator('.notifications-toasts .notification-list-item', { hasText: /Lamina \(shop\): generation \d+/ }).first()
      .locator('.monaco-button', { hasText: 'Show Details' }).click();
    const details = await until('the status details as lines', async () => (await page.locator('.part.editor .editor-instance .view-lines').allInnerTexts())
      .find((t) => /retrieval\s+hybrid/.test(t) && /server\s+writer;\swatcher\srunning/.test(t)), 15000);
    await runCommand('View: Close Editor');
    return `${said}; details: ${(/contents\s+[^\n]+/.exec(details) ?? [''])[0].replace(/\s+/g, ' ')}`;
  });

  await step('Rebuild Context rebuilds the index, the status bar returns to fresh (lamina/contextRebuild)', ['contextRebuild'], async () => {
    const gen = async () => Number((/Lamina: fresh · gen (\d+)/.exec(await statusBar()) ?? [])[1] ?? NaN);
    const before = await until('a generation in the status bar', gen, 30000);
    await runCommand('Lamina: Rebuild Context');
    const toast = page.locator('.notifications-toasts .notification-list-item-message', { hasText: /Lamina: rebuilt shop/ }).first();
    let said = '';
    const after = await until(`a generation above ${before}, fresh`, async () => {
      if (!said && await toast.isVisible().catch(() => false)) said = (await toast.innerText()).trim();
      const g = await gen();
      return g > before ? g : null;
    }, 60000);
    return `gen ${before} -> ${after}${said ? `; ${said}` : ''}`;
  });

  await step('saving the repository\'s .lamina/config.toml reopens its folder in the server: Context Status shows its history bound, the panel keeps the task and its picked workflow', ['contextStatus', 'setTask', 'selectWorkflow'], async () => {
    const file = path.join(WS, '.lamina', 'config.toml');
    // Context Status, asked again until the reopened folder's says `bound` (its history line)
    const statusSaying = async (what, bound) => {
      let shown = '', bar = '';  // what the last try saw: a timeout says it
      const text = await until(what, async () => {
        bar = await statusBar();
        if (!/Lamina: fresh/.test(bar)) return null;
        await runCommand('Lamina: Context Status');
        const toast = page.locator('.notifications-toasts .notification-list-item-message', { hasText: bound }).first();
        const any = page.locator('.notifications-toasts .notification-list-item-message', { hasText: /Lamina \(shop\)/ }).first();
        return await toast.waitFor({ timeout: 3000 }).then(() => toast.innerText(), async () => {
          shown = (await any.innerText({ timeout: 500 }).catch(() => '')).trim();
          return null;
        });
      }, 60000, 1000).catch((e) => { throw new Error(`${e.message}; status bar: ${bar}; Context Status said: ${shown || '(no toast)'}`); });
      await runCommand('Notifications: Clear All Notifications');
      return text.trim().replace(/^.*?(history on)/, '$1');
    };
    fs.writeFileSync(file, '[history]\nmax_commits = 7\nmax_years = 0\n');
    let text = '';
    try {
      text = await statusSaying('Context Status with the file\'s bound', /history on \(newest 7 commits read, all vote\)/);
    } finally {
      fs.rmSync(file);
    }
    // the reopened folder kept the task, with the workflow picked by hand (Select Workflow…)
    const kept = await until('the panel to show ship-order selected again', async () => {
      const t = (await panel.textContent('#outcome').catch(() => '')) ?? '';
      return /Selected\s+ship-order/.test(t) && (await panel.$$('li.span')).length ? t.trim() : null;
    }, 60000);
    // deleting it reopens the folder again, back to the default bound
    const back = await statusSaying('Context Status with the default bound', /newest 20,000 commits read, the last 5 years vote/);
    return `${text}; panel: ${kept} -> deleted: ${back}`;
  });

  await step('Clear Task empties the panel (lamina/clearTask)', ['clearTask'], async () => {
    await runCommand('Lamina: Clear Task');
    await until('the empty panel', async () => /No task yet/.test((await panel.textContent('#body').catch(() => '')) ?? ''), 15000);
    if ((await panel.$$('li.span')).length) throw new Error('spans still shown');
  });

  await step('a broken workflow YAML shows a diagnostic in the Problems view', [], async () => {
    const yaml = '20-orders.yaml';
    await openFile(yaml);
    // an operation step whose actor no graph node defines: valid YAML, invalid graph
    const lines = fs.readFileSync(path.join(WS, '.lamina/workflows', yaml), 'utf8').split('\n');
    const actorLine = lines.findIndex((l) => /^\s+actor:\s*support-agent\s*$/.test(l)) + 1;
    if (actorLine < 1) throw new Error('no "actor: support-agent" line to break');
    await runCommand('Go to Line/Column...');
    await page.keyboard.type(String(actorLine));
    await page.keyboard.press('Enter');
    await page.keyboard.press('End');
    await page.keyboard.type('-who-does-not-exist');
    await page.keyboard.press('Control+S');
    await runCommand('View: Focus Problems (Errors, Warnings, Infos)').catch(async () => runCommand('Problems: Focus on Problems View'));
    const row = page.locator('.markers-panel .monaco-list-row', { hasText: /who-does-not-exist|actor/ }).first();
    await row.waitFor({ state: 'visible', timeout: 30000 });
    // the server also says it once (window/showMessage), with the line to open
    const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: 'LAMINA_GRAPH_INVALID' }).first();
    await toast.waitFor({ timeout: 20000 });
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes('Open YAML')) throw new Error(`no Open YAML action: ${buttons}`);
    // VS Code does not show a notification again while an identical one is listed: clear them, so the
    // restarted server's own notice (next step) is visible
    await runCommand('Notifications: Clear All Notifications');
    return `${yaml}:${actorLine} -> ${(await row.innerText()).replace(/\s+/g, ' ').slice(0, 140)}; notice [${buttons.join(' | ')}]`;
  });
  await step('after a restart: no model -> one warning with Reinstall Model and status lexical_degraded; the broken graph -> Open YAML at the line; then recovery', [], async () => {
    const wsSettings = path.join(WS, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(wsSettings), { recursive: true });
    fs.writeFileSync(wsSettings, JSON.stringify({ 'lamina.python': process.env.NO_MODEL_PYTHON }, null, 2));
    // one notice: the server's LAMINA_RETRIEVAL_INTEGRITY message, or the client's own for a lexical_degraded state
    const toast = page.locator('.notifications-toasts .notification-list-item',
      { hasText: /LAMINA_RETRIEVAL_INTEGRITY|dense retrieval is unavailable/ }).first();
    await toast.waitFor({ timeout: 45000 });
    const notices = await page.locator('.notifications-toasts .notification-list-item',
      { hasText: /LAMINA_RETRIEVAL_INTEGRITY|dense retrieval is unavailable/ }).count();
    if (notices !== 1) throw new Error(`${notices} notices about the model, expected one`);
    const text = (await toast.locator('.notification-list-item-message').innerText()).trim();
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    if (!buttons.includes('Reinstall Model')) throw new Error(`no Reinstall Model action: ${buttons}`);
    await until('"Lamina: lexical_degraded" in the status bar', async () => /Lamina: lexical_degraded/.test(await statusBar()), 30000);
    // the YAML broken above is still broken: the restarted server's graph gets its own notification
    const graph = page.locator('.notifications-toasts .notification-list-item', { hasText: 'LAMINA_GRAPH_INVALID' }).first();
    await graph.waitFor({ timeout: 20000 });
    await graph.locator('.monaco-button', { hasText: 'Open YAML' }).click();
    const at = await yamlLineAtCursor('the broken line', (l) => l.includes('who-does-not-exist'));
    await toast.locator('.codicon-notifications-clear, .codicon-close').first().click().catch(() => page.keyboard.press('Escape'));
    fs.rmSync(wsSettings);
    await until('"Lamina: fresh" again', async () => /Lamina: fresh/.test(await statusBar()), 60000);
    return `${text.slice(0, 110)}… [${buttons.join(' | ')}]; graph notice -> Open YAML -> ${at}`;
  });

  await step('a Python without Lamina: one clear notification with actions, status "not running", then recovery', [], async () => {
    // lamina.python is machine-overridable: a workspace setting overrides the machine one
    const wsSettings = path.join(WS, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(wsSettings), { recursive: true });
    fs.writeFileSync(wsSettings, JSON.stringify({ 'lamina.python': path.join(WS, 'no-such-python') }, null, 2));
    const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: 'Lamina cannot start' }).first();
    await toast.waitFor({ timeout: 30000 });
    const text = (await toast.locator('.notification-list-item-message').innerText()).trim();
    if (/Traceback|at \w+ \(/.test(text)) throw new Error(`stack trace in the notification: ${text}`);
    const buttons = await toast.locator('.monaco-button').allInnerTexts();
    for (const b of ['Setup Instructions', 'Choose Python']) if (!buttons.includes(b)) throw new Error(`no "${b}" action: ${buttons}`);
    await until('"Lamina: not running" in the status bar', async () => /Lamina: not running/.test(await statusBar()), 15000);
    await toast.locator('.monaco-button', { hasText: 'Setup Instructions' }).click();
    await until('the setup instructions preview', async () => {
      for (const f of page.frames()) {
        const t = await f.evaluate(() => document.body?.innerText ?? '').catch(() => '');
        if (/bash scripts\/setup\.sh/.test(t) && /Lamina: Python/.test(t)) return true;
      }
      return false;
    }, 20000);
    await page.keyboard.press('Escape');
    fs.rmSync(wsSettings);
    await until('"Lamina: fresh" again', async () => /Lamina: fresh/.test(await statusBar()), 60000);
    return `${text.slice(0, 120)} [${buttons.join(' | ')}]`;
  });
} finally {
  await browser.close();
}
const rows = results.map((r) => `${r.status === 'ok' ? 'ok  ' : r.status.startsWith('SKIP') ? 'skip' : r.status === 'not run' ? '----' : 'FAIL'}  ${r.name}${r.status !== 'ok' && r.status !== 'FAILED' ? `  (${r.status})` : ''}${r.error ? `  ${r.error}` : ''}`);
console.log('\n' + rows.join('\n'));
fs.writeFileSync(path.join(ARTIFACTS, 'e2e-results.json'), JSON.stringify({ seconds: Number(secs()), results }, null, 2));
console.log(`e2e drive: ${results.filter((r) => r.status === 'ok').length} ok, ${results.filter((r) => r.status.startsWith('SKIP')).length} skipped, ${failed ? 'FAILED' : 'no failures'} in ${secs()}s`);
process.exit(failed ? 1 : 0);
