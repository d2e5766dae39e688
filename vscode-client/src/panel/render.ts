/**
 * The side panel, rendered from the packet JSON with plain DOM calls (no VS Code API, no
 * innerHTML: span text and reasons are untrusted, so they only ever become text nodes).
 * It runs inside the webview and in a plain browser page for the tests.
 */
import type { Packet, Span, WorkflowClosure, GraphItem } from '../protocol';
import type { FromPanel, PanelState } from './messages';
import { retrievalLine } from '../logic/status';
import { serverView, type ServerBanner, type ServerView } from '../logic/serverView';

type Post = (m: FromPanel) => void;
type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v; else el.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

const OUTCOME_TEXT: Record<string, string> = {
  selected: 'Selected',
  multi_workflow: 'Several workflows',
  ambiguous: 'Ambiguous',
  new_workflow_required: 'New workflow required',
};

/** A path as text with a line-break opportunity after each `/` (and before the line numbers): a
 * narrow panel broke `backend/inkwell/payments` every few letters, wherever the width ran out.
 * The line numbers stay on one line (`:23-38` broke after its hyphen). */
export function breakable(path: string): (string | HTMLElement)[] {
  const out: (string | HTMLElement)[] = [];
  for (const part of path.split(/(?<=\/)|(?=:\d)/)) {
    if (out.length) out.push(document.createElement('wbr'));
    if (/^:\d/.test(part)) {
      const lines = document.createElement('span');
      lines.className = 'lines';
      lines.textContent = part;
      out.push(lines);
    } else out.push(part);
  }
  return out;
}

export function score(n: number): string { return (Math.round(n * 100) / 100).toFixed(2); }

/** Declared by the graph but not found by this search (the server's `PacketSpan.unranked`): no score to show. */
export function unranked(s: Span): boolean {
  return s.authority === 'declared' && s.score === 0 && Object.keys(s.legs ?? {}).length === 0;
}
const UNRANKED_TITLE = 'declared by the workflow graph; this search did not rank it';
/** Declared spans lead (the graph's authority), so a declared #1 may score below a retrieved #2. The same words as
 * index/render.py's ORDER_NOTE: tests/test_packet.py holds them equal. */
export const ORDER_NOTE = "Declared spans first, in the workflow's operation order; retrieved spans after them, by score.";

export function spanLabel(s: Span): string {
  return lineLabel(s.file, s.start_line, s.end_line);
}

function lineLabel(file: string, start: number, end: number): string {
  return start === end ? `${file}:${start}` : `${file}:${start}-${end}`;
}

/** One row of the span list: a span, or the chunks of one declared symbol folded into one entry. */
export interface SpanEntry {
  /** The span the row opens and is named by: the symbol's first chunk. */
  head: Span;
  /** Every span of the entry in line order; just `[head]` for a plain span. */
  spans: Span[];
  startLine: number;
  endLine: number;
}

/**
 * The ranking as the panel lists it: a span whose `continues` names a listed span (a later chunk
 * of one long declared symbol, index/packet.py) joins that span's entry, which keeps the rank of
 * the first of them to appear; every other span is an entry of its own. The server numbers its
 * lenses and hovers the same way (index.packet_models.entry_ranks).
 */
export function groupSpans(spans: readonly Span[]): SpanEntry[] {
  const listed = new Map(spans.map((s) => [s.id, s] as const));
  const groups = new Map<string, Span[]>();
  for (const s of spans) {
    const key = s.continues && listed.has(s.continues) ? s.continues : s.id;
    const group = groups.get(key);
    if (group) group.push(s); else groups.set(key, [s]);
  }
  return [...groups].map(([key, members]) => {
    const sorted = [...members].sort((a, b) => a.start_line - b.start_line || a.end_line - b.end_line);
    return {
      head: listed.get(key)!, spans: sorted,
      startLine: Math.min(...sorted.map((s) => s.start_line)), endLine: Math.max(...sorted.map((s) => s.end_line)),
    };
  });
}

/** `file:start-end` of an entry: the whole symbol for a folded one. */
export function entryLabel(e: SpanEntry): string { return lineLabel(e.head.file, e.startLine, e.endLine); }

export interface PanelHandle {
  update(state: PanelState): void;
  reveal(id: string): boolean;
}

/** Why a control is off while the server is not running (its tooltip). */
const NEEDS_SERVER = 'Needs the Lamina server running: see the message at the top of the panel';
const NO_FOLDER = 'Needs a folder: open one (File > Open Folder), Lamina indexes it';

/** Off, with the reason as its tooltip (media/panel.css greys a disabled button, hover included). */
function setEnabled(b: HTMLButtonElement, on: boolean, why = NEEDS_SERVER): void {
  b.disabled = !on;
  if (on) b.removeAttribute('title'); else b.title = why;
}

/** The server's state above everything else: not running (with the error and what to do), or starting. */
function renderBanner(box: HTMLElement, b: ServerBanner | null, post: Post): void {
  box.replaceChildren();
  box.hidden = b === null;
  box.className = b ? `notice server-state ${b.tone === 'error' ? 'error' : b.tone === 'warning' ? 'warn' : 'busy'}` : 'server-state';
  if (!b) { box.removeAttribute('role'); return; }
  box.setAttribute('role', b.tone === 'busy' ? 'status' : 'alert');
  box.append(h('strong', { class: 'server-title' }, b.title));
  if (b.text) box.append(h('div', { class: 'server-text' }, b.text));
  if (b.actions.length) {
    box.append(h('div', { class: 'row server-actions' }, ...b.actions.map((a, i) =>
      button(`server-${a.kind}`, a.title, `${a.title} (the Lamina server is not running)`, () => post({ type: 'serverAction', kind: a.kind }), i === 0 ? '' : 'secondary'))));
  }
}

export function createPanel(root: HTMLElement, post: Post): PanelHandle {
  root.replaceChildren();
  const serverBox = h('div', { id: 'server-state', class: 'server-state' });
  serverBox.hidden = true;
  let bannerKey = '';
  let canSetTask = true;
  const form = h('form', { class: 'task-form', 'aria-label': 'Task' });
  const label = h('label', { for: 'task-input', class: 'task-label' }, 'Task');
  const input = h('textarea', {
    id: 'task-input', rows: '2', placeholder: 'Describe the task or paste a bug report; Enter sets it',
    'aria-label': 'Task: Enter sets the task, Shift+Enter adds a line',
  });
  const setBtn = h('button', { type: 'submit', id: 'set-task', 'aria-label': 'Set task' }, 'Set Task');
  const clearBtn = h('button', { type: 'button', id: 'clear-task', class: 'secondary', 'aria-label': 'Clear task' }, 'Clear');
  form.append(label, input, h('div', { class: 'row' }, setBtn, clearBtn));
  const submit = (): void => {
    const task = input.value.trim();
    if (task && canSetTask) post({ type: 'setTask', task });
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  clearBtn.addEventListener('click', () => { if (!canSetTask) return; input.value = ''; post({ type: 'clearTask' }); });

  const body = h('div', { id: 'body', 'aria-live': 'polite' });
  root.append(serverBox, form, body);
  let lastTask: string | null = null;
  let highlighted: string | null = null;
  let current: PanelState | null = null;
  const view: ViewOptions = { allSpans: false, onShowAll: () => { view.allSpans = true; if (current) update(current); } };

  const update = (state: PanelState): void => {
    // several workspace folders: the panel follows the editor's, so it says whose task this is
    const name = (state.folderCount ?? 1) > 1 && state.folder ? folderLabel(state.folder) : '';
    label.textContent = name ? `Task · ${name}` : 'Task';
    input.setAttribute('aria-label', `${name ? `Task for ${name}` : 'Task'}: Enter sets the task, Shift+Enter adds a line`);
    if (state.task !== lastTask && document.activeElement !== input) { input.value = state.task; view.allSpans = false; }
    lastTask = state.task;
    current = state;
    const sv = serverView(state);
    // rebuilt only when it changes: an alert read out again at every index state helps nobody
    const key = JSON.stringify(sv.banner);
    if (key !== bannerKey) { bannerKey = key; renderBanner(serverBox, sv.banner, post); }
    const noFolder = state.folderCount === 0;  // an empty window: nothing to index, no task to set
    canSetTask = sv.canSetTask && !noFolder;
    setEnabled(setBtn, canSetTask, noFolder ? NO_FOLDER : NEEDS_SERVER);
    setEnabled(clearBtn, canSetTask, noFolder ? NO_FOLDER : NEEDS_SERVER);
    body.classList.toggle('stale', sv.stale);
    body.replaceChildren(...renderBody(state, post, view, sv));
    if (highlighted) mark(highlighted, false);
  };

  const mark = (id: string, focus: boolean): boolean => {
    // a folded entry answers for every chunk it holds
    const el = body.querySelector<HTMLElement>(`li.span[data-span-ids~="${CSS.escape(id)}"]`);
    body.querySelectorAll('.span.highlight').forEach((e) => e.classList.remove('highlight'));
    if (!el) return false;
    el.classList.add('highlight');
    if (focus) {
      el.scrollIntoView({ block: 'center' });
      el.focus({ preventScroll: true });
    }
    return true;
  };

  return {
    update,
    reveal(id: string): boolean {
      highlighted = id;
      const entry = current?.packet ? groupSpans(current.packet.spans).findIndex((e) => e.spans.some((sp) => sp.id === id)) : -1;
      if (!view.allSpans && entry >= FIRST_SPANS && current) { view.allSpans = true; update(current); }
      return mark(id, true);
    },
  };
}

function folderLabel(uri: string): string {
  const last = uri.replace(/\/+$/, '').split('/').pop() ?? uri;
  try { return decodeURIComponent(last); } catch { return last; }
}

/** Entries (a folded symbol is one) shown before "Show all": the top of the ranking is where to start. */
export const FIRST_SPANS = 8;
interface ViewOptions { allSpans: boolean; onShowAll: () => void }

function renderBody(state: PanelState, post: Post, view: ViewOptions, sv: ServerView): Node[] {
  const out: Node[] = [];
  if (sv.staleNote) out.push(h('p', { id: 'stale-note', class: 'notice warn', role: 'status' }, h('span', { class: 'badge warn' }, 'stale'), ' ', sv.staleNote));
  const p = state.packet;
  if (state.packetState === 'preparing') {
    out.push(sv.stale
      ? h('p', { class: 'notice muted' }, `The packet for “${state.task}” was being prepared when the server stopped; it is prepared again once a server runs.`)
      : h('p', { class: 'notice busy', role: 'status' }, `Preparing the packet for: ${state.task}`));
  }
  if (state.packetState === 'error' && state.error) {
    out.push(h('p', { class: 'notice error', role: 'alert' }, `${state.error.code}: ${state.error.message}`, state.error.remedy ? ` — ${state.error.remedy}` : ''));
  }
  if (!p) {
    if (state.packetState === 'none' || state.packetState === 'cleared') {
      out.push(h('p', { class: 'notice muted empty' }, state.folderCount === 0
        ? 'No folder is open. Open one (File > Open Folder): Lamina indexes it, then takes a task here.'
        : sv.canSetTask
          ? 'No task yet. Type one above and press Enter: Lamina selects the workflow it belongs to and ranks the code to work on.'
          : 'No task yet: a task can be set once the Lamina server runs.'));
    }
    out.push(dim(renderRetrieval(state, null, sv.stale), sv.stale));
    return out;
  }
  // which workflow, then where to work, then what the workflow obliges
  const links = sv.packetActions;
  out.push(dim(renderSelection(p, post, links), sv.stale));
  out.push(dim(renderSpans(p, post, view), sv.stale));
  const selected = new Set(p.selection.selected);
  for (const wf of p.workflows) if (selected.has(wf.id) || p.workflows.length === 1) out.push(dim(renderWorkflow(wf, post, links), sv.stale));
  out.push(dim(renderRetrieval(state, p, sv.stale), sv.stale));
  const copy = button('copy-packet', 'Copy Packet', 'Copy the packet JSON for an agent', () => { if (sv.packetActions) post({ type: 'copyPacket' }); });
  const show = button('show-packet', 'Show Packet', 'Show the packet as markdown beside the editor', () => { if (sv.packetActions) post({ type: 'showPacket' }); });
  setEnabled(copy, sv.packetActions);
  setEnabled(show, sv.packetActions);
  out.push(h('div', { class: 'row actions' }, copy, show));
  return out;
}

/** A stale part of the packet looks it (through the CSSOM: the CSP allows no style attribute). */
function dim<T extends HTMLElement>(el: T, stale: boolean): T {
  if (stale) { el.style.opacity = '0.6'; el.dataset['stale'] = 'true'; }
  return el;
}

/** A link to a workflow's YAML (lamina/showWorkflow): inert, and says why, while the server is not running. */
function wfLink(text: string, aria: string, workflow: string, post: Post, live: boolean): HTMLElement {
  if (!live) return h('a', { class: 'wf-link', 'aria-disabled': 'true', title: NEEDS_SERVER, 'aria-label': `${aria} (needs the Lamina server running)` }, text);
  const link = h('a', { href: '#', class: 'wf-link', 'aria-label': aria }, text);
  link.addEventListener('click', (e) => { e.preventDefault(); post({ type: 'showWorkflow', workflow }); });
  return link;
}

function button(id: string, text: string, aria: string, onClick: () => void, cls = ''): HTMLButtonElement {
  const b = h('button', { type: 'button', id, 'aria-label': aria, class: cls }, text);
  b.addEventListener('click', onClick);
  return b;
}

function section(id: string, title: string, ...children: Child[]): HTMLElement {
  return h('section', { id, 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), ...children);
}

const NO_WORKFLOWS_NOTE = 'the workflow graph defines no workflows';

/** The folder's graph defines no workflow at all (the selection had nothing to choose from). */
function noWorkflows(p: Packet): boolean {
  return p.selection.candidates.length === 0 && p.selection.selected.length === 0 && p.notes.some((n) => n.startsWith(NO_WORKFLOWS_NOTE));
}

function renderSelection(p: Packet, post: Post, live: boolean): HTMLElement {
  const sel = p.selection;
  const selected = new Set(sel.selected);
  const none = noWorkflows(p);  // not a verdict on the task: there was nothing to choose from
  const outcome = h('p', { class: `outcome outcome-${sel.status}`, id: 'outcome' },
    h('span', { class: 'badge' }, none ? 'No workflows defined' : OUTCOME_TEXT[sel.status] ?? sel.status),
    sel.selected.length ? ` ${sel.selected.join(', ')}` : '');
  const reasons = sel.reasons.length && !none ? h('p', { class: 'muted small' }, sel.reasons.join('; ')) : null;
  // an edit broke the graph: the selection is the last valid graph's (it read as current, no word said)
  const problems = p.graph?.state === 'last_valid' ? (p.graph.problems ?? []).length : 0;
  const lastValid = p.graph?.state === 'last_valid'
    ? h('p', { class: 'notice warn', id: 'graph-last-valid' },
      `The workflow graph does not validate (${problems} problem${problems === 1 ? '' : 's'}, in the Problems view): this selection comes from its last valid version.`)
    : null;
  const table = h('table', { class: 'candidates', 'aria-label': 'Candidate workflows and scores' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Workflow'), h('th', { scope: 'col', class: 'num' }, 'Score'))));
  const tbody = h('tbody');
  // The selected ones and the other scored ones up to 6 rows; zero scores only as a count.
  const shown = sel.candidates.filter((c, i) => selected.has(c.workflow_id) || (c.score > 0 && i < 6));
  const hidden = sel.candidates.length - shown.length;
  for (const c of shown) {
    const link = wfLink(c.workflow_id, `Open workflow ${c.workflow_id} in its YAML`, c.workflow_id, post, live);
    const row = h('tr', { class: selected.has(c.workflow_id) ? 'candidate selected' : 'candidate', title: c.reasons.join('\n') },
      h('td', {}, selected.has(c.workflow_id) ? '✓ ' : '', link, h('div', { class: 'muted small' }, c.title)),
      // a workflow picked by name is not scored: "picked", not a 0.00 that reads as a bad match
      h('td', { class: 'num' }, selected.has(c.workflow_id) && c.score === 0 ? 'picked' : score(c.score)));
    tbody.append(row);
  }
  table.append(tbody);
  const more = hidden > 0 ? h('p', { class: 'muted small' }, `+${hidden} more workflow${hidden === 1 ? '' : 's'} scored lower`) : null;
  // no graph (or no active workflow in it): a table of headers only would say nothing
  if (sel.candidates.length === 0) {
    return section('selection', 'Selection', lastValid, outcome, reasons,
      h('p', { class: 'notice muted small', id: 'no-workflows' }, 'No workflow to choose from: describe them in YAML under .lamina/workflows/ and commit them (the format: docs/workflows.md of Lamina). Until then the spans below are plain retrieval of the task.'));
  }
  // every workflow scored 0: no rows to show, so no table either
  if (shown.length === 0) {
    const n = sel.candidates.length;
    return section('selection', 'Selection', lastValid, outcome, reasons,
      h('p', { class: 'muted small', id: 'no-workflows' }, `None of the ${n} workflow${n === 1 ? '' : 's'} scored above 0 for this task.`));
  }
  return section('selection', 'Selection', lastValid, outcome, reasons, table, more);
}

function items(id: string, title: string, list: GraphItem[], fmt: (g: GraphItem) => Child[]): HTMLElement | null {
  if (!list || list.length === 0) return null;
  return h('div', { class: `closure ${id}` }, h('h3', {}, title), h('ul', {}, ...list.map((g) => h('li', {}, ...fmt(g)))));
}

function renderWorkflow(wf: WorkflowClosure, post: Post, live: boolean): HTMLElement {
  const link = wfLink(wf.defined_at, `Open workflow ${wf.id} at ${wf.defined_at}`, wf.id, post, live);
  const ops = h('ol', { class: 'operations', 'aria-label': `Operations of ${wf.id} in order` },
    ...wf.operations.map((op) => h('li', {},
      h('strong', {}, op.title || op.id),
      h('span', { class: 'muted small' }, ` ${op.actor}${op.authority && op.authority !== op.actor ? ` (authority: ${op.authority})` : ''}`,
        op.from_state || op.to_state ? ` · ${op.from_state} → ${op.to_state}` : ''))));
  return h('section', { class: 'workflow', id: `wf-${wf.id}`, 'aria-label': `Workflow ${wf.id}` },
    h('h2', {}, `${wf.title} `, h('span', { class: 'muted' }, `(${wf.id})`)),
    h('p', { class: 'small' }, link),
    wf.summary ? h('p', { class: 'summary' }, wf.summary) : null,
    h('h3', {}, 'Operations'), ops,
    items('invariants', 'Invariants', wf.invariants, (g) => [g.text || g.title || g.id]),
    items('risks', 'Risks', wf.risks, (g) => [g.kind ? h('span', { class: `badge risk-${g.kind}` }, g.kind) : null, ' ', g.text || g.title || g.id]),
    items('proof', 'Proof required', wf.proof_requirements, (g) => [g.kind ? h('span', { class: 'badge' }, g.kind) : null, ' ', g.text || g.title || g.id]));
}

function renderSpans(p: Packet, post: Post, view: ViewOptions): HTMLElement {
  const list = h('ol', { class: 'spans', 'aria-label': 'Ranked source spans' });
  const entries = groupSpans(p.spans);
  const shown = view.allSpans ? entries : entries.slice(0, FIRST_SPANS);
  shown.forEach((e, i) => {
    const rank = i + 1;
    const s = e.head;
    const chunks = e.spans.length;
    const stale = e.spans.some((sp) => sp.stale);
    const reresolved = e.spans.some((sp) => sp.stale_reresolved);
    const best = Math.max(...e.spans.map((sp) => sp.score));
    const noRank = e.spans.every(unranked);
    const open = (): void => post({ type: 'openSpan', id: s.id, file: s.file, startLine: s.start_line, endLine: s.end_line });
    const li = h('li', {
      class: `span authority-${s.authority ?? 'retrieved'}${stale ? ' stale' : ''}${chunks > 1 ? ' folded' : ''}`,
      'data-span-id': s.id, 'data-span-ids': e.spans.map((sp) => sp.id).join(' '), tabindex: '0', role: 'button',
      'aria-label': `Span ${rank}: ${s.symbol || s.file}, ${entryLabel(e)}${chunks > 1 ? `, ${chunks} chunks` : ''}, ${noRank ? 'not ranked by this search' : `score ${score(best)}`}, ${s.authority ?? 'retrieved'}. Enter opens it.`,
    },
    h('div', { class: 'span-head' },
      h('span', { class: 'rank' }, `#${rank}`),
      h('span', { class: 'loc' }, ...breakable(entryLabel(e))),
      noRank ? h('span', { class: 'score muted', title: UNRANKED_TITLE }, '—') : h('span', { class: 'score', title: 'score' }, score(best))),
    h('div', { class: 'span-sub' },
      h('span', { class: 'symbol' }, s.symbol || '(module)'),
      h('span', { class: `badge authority` }, s.authority ?? 'retrieved'),
      chunks > 1 ? h('span', { class: 'chunks muted small', title: `one symbol in ${chunks} chunks: ${e.spans.map(spanLabel).join(', ')}` }, `${chunks} chunks`) : null,
      stale ? h('span', { class: 'badge warn' }, 'stale') : null,
      reresolved ? h('span', { class: 'badge' }, 're-resolved') : null),
    s.reasons.length ? h('ul', { class: 'reasons', 'aria-label': 'Reasons' }, ...s.reasons.slice(0, 6).map((r) => h('li', {}, r))) : null);
    li.addEventListener('click', open);
    li.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); }
    });
    list.append(li);
  });
  const omitted = p.omitted.filter((o) => o.what === 'span').map((o) => omittedPhrase(o.count, o.reason));
  const rest = entries.length - shown.length;
  const kinds = new Set(p.spans.map((sp) => sp.authority ?? 'retrieved'));
  return section('spans', `Ranked spans (${entries.length})`,
    p.span_source === 'task' && !noWorkflows(p) ? h('p', { class: 'notice muted small' }, 'No workflow selected: plain retrieval of the task.') : null,
    kinds.has('declared') && kinds.has('retrieved') ? h('p', { id: 'spans-order', class: 'muted small' }, ORDER_NOTE) : null,
    list,
    rest > 0 ? button('show-all-spans', `Show all ${entries.length} spans`, `Show the other ${rest} ranked spans`, view.onShowAll, 'secondary') : null,
    omitted.length ? h('p', { class: 'muted small' }, `Not in the packet: ${omitted.join('; ')}.`) : null);
}

/** One omission of ranked spans in words: "Ranked spans (20)" beside "Omitted: 20 by limit" read
 * as if the twenty shown had been left out. */
export function omittedPhrase(count: number, reason: string): string {
  const n = (one: string, many: string): string => `${count} ${count === 1 ? one : many}`;
  switch (reason) {
    case 'limit': return `${n('more ranked span', 'more ranked spans')} past its span limit`;
    case 'budget': return `${n('span', 'spans')} past its token budget`;
    case 'excluded': return `${n('span', 'spans')} excluded as asked`;
    case 'duplicate': return `${n('span', 'spans')} repeating one shown`;
    case 'graph_file': return `${n('span', 'spans')} of the workflow graph's own YAML (the workflow section shows it)`;
    default: return `${count} by ${reason}`;
  }
}

function renderRetrieval(state: PanelState, p: Packet | null, stale: boolean): HTMLElement {
  const live = state.index;
  const known = live ? retrievalLine(live) : p ? retrievalLine(p.retrieval) : 'no index state yet';
  const line = stale && (live || p) ? `last known, from the server that stopped: ${known}` : known;
  // a graph with no workflows is said once, in the selection (it came four times)
  const notes = p ? [...p.notes, ...(p.retrieval.notes ?? [])].filter((n) => !(noWorkflows(p) && n.startsWith(NO_WORKFLOWS_NOTE))) : [];
  const degraded = (live?.retrieval ?? p?.retrieval.retrieval) === 'lexical_degraded';
  return section('retrieval', 'Retrieval',
    h('p', { id: 'retrieval-state', class: degraded ? 'notice warn' : '' }, line),
    p ? h('p', { class: 'muted small' }, `packet: generation ${p.retrieval.generation} · ${p.retrieval.retrieval} · budget ${p.budget.used}/${p.budget.limit} (${p.budget.mode})`) : null,
    notes.length ? h('ul', { class: 'notes small' }, ...notes.map((n) => h('li', {}, n))) : null);
}
