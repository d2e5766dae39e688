/**
 * Turns what the server says (a `window/showMessage` starting with a `LAMINA_…` code, a JSON-RPC
 * refusal with `data.code`, or a failed start) into one notification with one useful action.
 * The full text always goes to the output channel; the notification never shows a stack trace.
 */
import type { LaminaErrorData } from '../protocol';

export type ActionKind =
  | 'setupInstructions'   // open the extension's setup page
  | 'reinstallModel'      // run `<python> -m assets.install` in a terminal
  | 'runSetup'            // run `bash scripts/setup.sh` in a terminal (a Lamina checkout)
  | 'openYaml'            // open the graph file at the line
  | 'showProblems'        // open the Problems view
  | 'contextStatus'       // show Lamina: Context Status
  | 'restartServer'
  | 'choosePython'        // open the lamina.python setting
  | 'showOutput';

export interface Action { kind: ActionKind; title: string }

export interface Notice {
  severity: 'error' | 'warning' | 'info';
  code: string | null;
  /** One line, no traceback. */
  text: string;
  actions: Action[];
  /** For `openYaml`: the workspace-relative (or absolute) file and its 1-based line. */
  file?: string;
  line?: number;
  /** For `runSetup`: the Lamina checkout to run `bash scripts/setup.sh` in. */
  dir?: string;
}

const CODE_RE = /^\s*(LAMINA_[A-Z_]+)\s*[:\-—]?\s*/;
const FILE_LINE_RE = /((?:[\w.@-]+\/)*[\w.@-]+\.ya?ml):(\d+)/;

export function codeOf(text: string): string | null {
  const m = CODE_RE.exec(text);
  return m ? m[1]! : null;
}

/** Keeps the first line and drops anything that looks like a Python traceback. */
export function oneLine(text: string, max = 300): string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim());
  // A Python traceback: only its last line (the exception) says anything to a user.
  const traceback = lines.some((l) => /^Traceback \(most recent call last\)/.test(l.trim()));
  const t = ((traceback ? lines[lines.length - 1] : lines[0]) ?? '').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

export function actionsFor(code: string | null): Action[] {
  switch (code) {
    case 'LAMINA_RETRIEVAL_INTEGRITY':
    case 'LAMINA_DENSE_UNAVAILABLE':
      return [{ kind: 'reinstallModel', title: 'Reinstall Model' }, { kind: 'setupInstructions', title: 'Setup Instructions' }];
    case 'LAMINA_INDEX_LOCKED':
      return [{ kind: 'contextStatus', title: 'Context Status' }, { kind: 'restartServer', title: 'Retry' }];
    case 'LAMINA_GRAPH_INVALID':
      return [{ kind: 'openYaml', title: 'Open YAML' }, { kind: 'showProblems', title: 'Show Problems' }];
    case 'LAMINA_NO_INDEX':
    case 'LAMINA_INDEX_CORRUPT':
      return [{ kind: 'contextStatus', title: 'Context Status' }, { kind: 'showOutput', title: 'Show Output' }];
    default:
      return [{ kind: 'showOutput', title: 'Show Output' }];
  }
}

/** A `window/showMessage` from the server. */
export function noticeFromServerMessage(type: 1 | 2 | 3 | 4 | number, text: string): Notice {
  const code = codeOf(text);
  const severity = type === 1 ? 'error' : type === 2 ? 'warning' : 'info';
  const n: Notice = { severity, code, text: oneLine(text), actions: code ? actionsFor(code) : [] };
  if (code === 'LAMINA_GRAPH_INVALID') {
    const fl = FILE_LINE_RE.exec(text);
    if (fl) { n.file = fl[1]; n.line = Number(fl[2]); } else n.actions = n.actions.filter((a) => a.kind !== 'openYaml');
  }
  return n;
}

/** A JSON-RPC refusal (`code -32001`, `data: {code, message, remedy}`) or any other request failure. */
export function noticeFromRequestError(err: unknown, what: string): Notice {
  const data = (err as { data?: Partial<LaminaErrorData> } | undefined)?.data;
  if (data && typeof data.code === 'string' && data.code.startsWith('LAMINA_')) {
    const remedy = data.remedy ? ` — ${data.remedy}` : '';
    const n = noticeFromServerMessage(1, `${data.code}: ${data.message ?? ''}${remedy}`);
    return n;
  }
  const msg = (err as { message?: string } | undefined)?.message ?? String(err);
  const code = codeOf(msg);
  if (code) return noticeFromServerMessage(1, msg);
  if (/Unhandled method|method not found|-32601/i.test(msg)) {
    return { severity: 'error', code: null, text: `${what}: this Lamina server does not answer it yet (${oneLine(msg)}). Update Lamina.`, actions: [{ kind: 'showOutput', title: 'Show Output' }] };
  }
  if (/Client is not running|not running|Connection is disposed|Pending response rejected/i.test(msg)) {
    return { severity: 'error', code: null, text: `${what}: the Lamina server is not running.`, actions: [{ kind: 'restartServer', title: 'Restart Server' }, { kind: 'showOutput', title: 'Show Output' }] };
  }
  return { severity: 'error', code: null, text: `${what} failed: ${oneLine(msg)}`, actions: [{ kind: 'showOutput', title: 'Show Output' }] };
}

/** The server could not start: interpreter missing, Lamina not importable, or the process died. `setupDir`: a Lamina
 * checkout whose `scripts/setup.sh` can make the Python (Run Setup runs it there, and nowhere else). */
export function noticeFromStartFailure(reason: 'python-missing' | 'lamina-missing' | 'failed' | 'crashed', detail: string, o: { setupDir?: string } = {}): Notice {
  const what = oneLine(detail, 200).replace(/[.\s]+$/, '');
  const setup = o.setupDir ? `, e.g. after bash scripts/setup.sh in ${o.setupDir} its .venv/bin/python` : ' (a Lamina checkout\'s .venv/bin/python after bash scripts/setup.sh there)';
  const text = reason === 'crashed' ? `The Lamina server stopped and was not restarted: ${what}. Restart it when the cause is fixed.`
    : reason === 'failed' ? `Lamina cannot start: ${what}. See the Lamina output; if Lamina is missing or broken there, set lamina.python to a Python that has Lamina${setup}.`
      : `Lamina cannot start: ${what}. Set lamina.python to a Python that has Lamina${setup}.`;
  const actions: Action[] = reason === 'crashed'
    ? [{ kind: 'restartServer', title: 'Restart Server' }, { kind: 'showOutput', title: 'Show Output' }]
    : [{ kind: 'setupInstructions', title: 'Setup Instructions' }, { kind: 'choosePython', title: 'Choose Python' }];
  if (reason !== 'crashed' && o.setupDir) actions.push({ kind: 'runSetup', title: 'Run Setup' });
  const n: Notice = { severity: 'error', code: null, text, actions };
  if (o.setupDir) n.dir = o.setupDir;
  return n;
}

/** The server process died and the language client restarts it (at most 3 times in 3 minutes). */
export function crashNotice(restart: number, max: number): Notice {
  return {
    severity: 'warning', code: null,
    text: `The Lamina server stopped unexpectedly; restarting it (restart ${restart} of ${max} within 3 minutes). The current task is set again once it runs; the Lamina output has the details.`,
    actions: [{ kind: 'showOutput', title: 'Show Output' }],
  };
}

/** Shows each code once per server start (a flood of identical toasts helps nobody). */
export class NoticeGate {
  private seen = new Set<string>();
  reset(): void { this.seen.clear(); }
  admit(n: Notice): boolean {
    // the server's LAMINA_RETRIEVAL_INTEGRITY and a lexical_degraded index state are one problem: one notice
    const key = n.code === 'LAMINA_DENSE_UNAVAILABLE' ? 'LAMINA_RETRIEVAL_INTEGRITY' : (n.code ?? n.text);
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }
}

/** The index state says dense retrieval is off: say so once, with the fix (the server may not send a message). */
export function noticeFromDegraded(lastError: string | null | undefined): Notice {
  const why = lastError ? ` (${oneLine(lastError, 160)})` : '';
  return {
    severity: 'warning', code: 'LAMINA_DENSE_UNAVAILABLE',
    text: `Lamina: dense retrieval is unavailable${why}; search and packets run on BM25 only (lexical_degraded). Reinstall the pinned model to fix it.`,
    actions: actionsFor('LAMINA_RETRIEVAL_INTEGRITY'),
  };
}
