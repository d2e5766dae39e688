/**
 * The status-bar item's text, tooltip and colour class from `lamina/indexState` and the build's
 * `$/progress`. With several folders the worst state wins (one indexing folder means "indexing").
 */
import type { IndexState } from '../protocol';

export interface Progress { folder?: string; title: string; message?: string; percentage?: number; active: boolean }
export type ServerPhase = 'starting' | 'running' | 'stopped' | 'failed';

/**
 * The builds' `$/progress`, one per folder: what the status bar shows. With several folders
 * building at once the slowest one's percentage (reports interleave: showing the last one made the
 * percentage jump back and forth between the folders).
 */
export class ProgressBoard {
  private readonly items = new Map<string, { title: string; message?: string; percentage?: number }>();

  begin(token: string, title: string, message?: string, percentage?: number): Progress | undefined {
    this.items.set(token, { title, message, percentage });
    return this.current();
  }

  report(token: string, message?: string, percentage?: number): Progress | undefined {
    const it = this.items.get(token) ?? { title: 'Lamina: indexing' };
    this.items.set(token, { title: it.title, message: message ?? it.message, percentage: percentage ?? it.percentage });
    return this.current();
  }

  end(token: string): Progress | undefined { this.items.delete(token); return this.current(); }

  clear(): void { this.items.clear(); }

  current(): Progress | undefined {
    const all = [...this.items.values()];
    if (all.length === 0) return undefined;
    const pcts = all.map((i) => i.percentage).filter((n): n is number => typeof n === 'number');
    const percentage = pcts.length ? Math.min(...pcts) : undefined;
    if (all.length === 1) return { title: all[0]!.title, message: all[0]!.message, percentage, active: true };
    const each = all.map((i) => `${i.title}${typeof i.percentage === 'number' ? ` ${Math.round(i.percentage)}%` : ''}${i.message ? ` (${i.message})` : ''}`);
    return { title: `Lamina: indexing ${all.length} folders`, message: each.join('; '), percentage, active: true };
  }
}

/** The command a click runs: Context Status needs a running server; without one, the panel says why and offers the fixes. */
export const CONTEXT_STATUS_COMMAND = 'lamina.contextStatus';
export const PANEL_FOCUS_COMMAND = 'lamina.panel.focus';

export interface StatusView { text: string; tooltip: string; severity: 'ok' | 'busy' | 'warning' | 'error'; command: string }

/**
 * Only a running server's index state is shown: stopped, failed or starting, the last index state
 * (and build progress) belongs to a server that is gone, so the item says that instead.
 */
/** What opens a folder (the status bar's command in an empty window). */
export const OPEN_FOLDER_COMMAND = 'workbench.action.files.openFolder';

export function statusView(phase: ServerPhase, states: IndexState[], progress: Progress | undefined, failure?: string, folders = 1): StatusView {
  const toPanel = 'Click for the Lamina panel: Restart Server, Show Output and the fix.';
  // an empty window: the server has nothing to index, and "waiting for index" would wait forever
  if (folders === 0 && phase !== 'failed') return { text: '$(folder) Lamina: no folder', tooltip: 'Lamina indexes the folders of the workspace: click to open one.', severity: 'ok', command: OPEN_FOLDER_COMMAND };
  if (phase === 'failed') return { text: '$(error) Lamina: not running', tooltip: `${failure ?? 'The Lamina server could not start.'}\n${toPanel}`, severity: 'error', command: PANEL_FOCUS_COMMAND };
  if (phase === 'stopped') return { text: '$(circle-slash) Lamina: not running', tooltip: `${failure ?? 'The Lamina server stopped.'}\n${toPanel}`, severity: 'warning', command: PANEL_FOCUS_COMMAND };
  if (phase === 'starting') return { text: '$(sync~spin) Lamina: starting', tooltip: 'Starting the Lamina language server…', severity: 'busy', command: CONTEXT_STATUS_COMMAND };
  const lines = states.map(describeState);
  const tip = (head: string): string => [head, ...lines, 'Click for Lamina: Context Status.'].join('\n');
  const view = (text: string, tooltip: string, severity: StatusView['severity']): StatusView => ({ text, tooltip, severity, command: CONTEXT_STATUS_COMMAND });
  if (progress?.active) {
    const pct = typeof progress.percentage === 'number' ? ` ${Math.round(progress.percentage)}%` : '';
    // the build's own word ("Lamina: embedding requests"): an index at 100 % then "indexing 0 %" read as a restart
    const doing = /^Lamina: ([a-z]+)/.exec(progress.title)?.[1] ?? 'indexing';
    return view(`$(sync~spin) Lamina: ${doing}${pct}`, tip(`${progress.title}${progress.message ? ' — ' + progress.message : ''}`), 'busy');
  }
  if (states.length === 0) return view('$(sync~spin) Lamina: waiting for index', tip('No index state yet.'), 'busy');
  const syncing = states.find((s) => s.freshness === 'syncing');
  if (syncing) return view('$(sync~spin) Lamina: syncing', tip('Syncing changed files.'), 'busy');
  const noIndex = states.find((s) => s.freshness === 'no_index');
  if (noIndex) return view('$(warning) Lamina: no index', tip(noIndex.last_error ? `No index: ${noIndex.last_error}` : 'No complete index yet: run Lamina: Rebuild Context.'), 'warning');
  const stale = states.find((s) => s.freshness === 'stale');
  if (stale) return view('$(warning) Lamina: stale', tip(`A sync failed: answers come from the last complete index until one succeeds${stale.last_error ? ` (${stale.last_error})` : ''}.`), 'warning');
  const degraded = states.find((s) => s.retrieval === 'lexical_degraded');
  if (degraded) return view('$(warning) Lamina: lexical_degraded', tip('Dense retrieval is unavailable: BM25 only.'), 'warning');
  if (states.some((s) => s.model === 'loading')) return view('$(sync~spin) Lamina: loading model', tip('The embedding model is loading (seconds): searches answer on BM25 until it is ready.'), 'busy');
  const pending = states.reduce((n, s) => n + (s.pending || 0), 0);
  if (pending > 0) return view(`$(sync~spin) Lamina: pending ${pending}`, tip(`${pending} embeddings pending (hybrid_partial).`), 'busy');
  const readonly = states.find((s) => s.freshness === 'readonly');
  if (readonly) return view('$(lock) Lamina: read-only', tip('Another process writes this index (LAMINA_INDEX_LOCKED).'), 'warning');
  const dirty = states.find((s) => s.freshness === 'dirty');
  if (dirty) return view('$(pencil) Lamina: dirty', tip('Unsaved edits; positions follow the buffers.'), 'ok');
  const gens = states.map((s) => s.generation).filter((g) => g !== null && g !== undefined);
  const gen = gens.length === 1 ? ` · gen ${gens[0]}` : '';
  return view(`$(check) Lamina: fresh${gen}`, tip('Index is fresh.'), 'ok');
}

export function describeState(s: IndexState): string {
  const name = folderName(s.folder);
  const parts = [`generation ${s.generation ?? '—'}`, s.freshness, s.retrieval, `${s.files} files`, `${s.chunks} chunks`];
  if (s.pending) parts.push(`${s.pending} pending`);
  if (s.model === 'loading') parts.push('model loading');
  if (s.last_error) parts.push(`last error: ${s.last_error}`);
  return `${name}: ${parts.join(' · ')}`;
}

export function folderName(uri: string): string {
  const trimmed = uri.replace(/\/+$/, '');
  const i = trimmed.lastIndexOf('/');
  return decodeURIComponent(i >= 0 ? trimmed.slice(i + 1) : trimmed);
}

/** One-line retrieval state for the panel: `generation 3 · fresh · hybrid`, `pending 12`, `lexical_degraded`. */
export function retrievalLine(s: { generation: number | null; freshness: string; retrieval: string; pending?: number; pending_embeddings?: number; model?: string }): string {
  const pending = s.pending ?? s.pending_embeddings ?? 0;
  const parts = [`generation ${s.generation ?? '—'}`, pending > 0 ? `pending ${pending}` : s.freshness, s.retrieval];
  if (s.model === 'loading') parts.push('model loading');
  return parts.join(' · ');
}
