/**
 * What the panel (and the packet document) say about the language server, from its phase and what
 * the client still holds from it. A packet, a task being prepared or an index state kept from a
 * server that is no longer running is STALE: it stays visible (the user's context, and the task
 * goes back to the server when it runs again) but says so, and the actions that need the server
 * are off. Pure: the webview renders it, the controller and the unit tests call it.
 */
import type { Action } from './serverMessages';
import type { ServerPhase } from './status';

/** The parts of the panel's state this reads (PanelState has them all). */
export interface ServerFacts {
  server: ServerPhase;
  /** Why it is not running, in words that say what to do (the start failure's or crash's notice). */
  serverProblem?: string | null;
  /** That notice's actions. */
  serverActions?: readonly Action[] | null;
  task: string;
  packetState: string;
  packet: unknown;
  index: unknown;
}

export interface ServerBanner {
  tone: 'busy' | 'warning' | 'error';
  title: string;
  text: string;
  /** Buttons, in order; the panel posts `{type: 'serverAction', kind}`. */
  actions: Action[];
}

export interface ServerView {
  /** Nothing to say while the server runs. */
  banner: ServerBanner | null;
  /** The packet, task state and index state shown came from a server that is no longer running. */
  stale: boolean;
  /** Said above a stale packet (or stale task state): what it is and what is off. */
  staleNote: string | null;
  /** Set Task and Clear: a starting server takes them once it runs; a stopped or failed one cannot. */
  canSetTask: boolean;
  /** Copy Packet, Show Packet, the workflow links: only for a packet of the running server. */
  packetActions: boolean;
}

export const RESTART: Action = { kind: 'restartServer', title: 'Restart Server' };
export const SHOW_OUTPUT: Action = { kind: 'showOutput', title: 'Show Output' };

export const NOT_RUNNING = 'The Lamina server is not running';

/** Does the client hold anything the server gave it (so that it is stale once the server is gone)? */
export function holdsServerState(f: Pick<ServerFacts, 'packet' | 'packetState' | 'index'>): boolean {
  return f.packet !== null && f.packet !== undefined || f.packetState === 'preparing' || f.packetState === 'error'
    || f.index !== null && f.index !== undefined;
}

export function serverView(f: ServerFacts): ServerView {
  const holds = holdsServerState(f);
  const hasPacket = f.packet !== null && f.packet !== undefined || f.packetState === 'preparing' || f.packetState === 'error';
  switch (f.server) {
    case 'running':
      return { banner: null, stale: false, staleNote: null, canSetTask: true, packetActions: true };
    case 'starting':
      if (!holds) return { banner: { tone: 'busy', title: 'Starting the Lamina server…', text: '', actions: [] }, stale: false, staleNote: null, canSetTask: true, packetActions: false };
      return {
        banner: {
          tone: 'busy', title: 'Restarting the Lamina server…',
          text: f.task ? 'The task is set again once it runs, and a new packet replaces the one below.' : 'What is shown below is from the server that stopped.',
          actions: [SHOW_OUTPUT],
        },
        stale: true,
        staleNote: hasPacket ? 'Stale: from the server that stopped, not the one starting. Copy Packet, Show Packet and the workflow links are off until a new packet arrives.' : null,
        canSetTask: true, packetActions: false,
      };
    case 'stopped':
    case 'failed': {
      const problem = (f.serverProblem ?? '').trim();
      const text = problem || (f.server === 'failed' ? 'It could not start: the Lamina output has the details.' : 'It stopped: Restart Server starts it again.');
      return {
        banner: { tone: f.server === 'failed' ? 'error' : 'warning', title: `${NOT_RUNNING}.`, text, actions: withRestart(f.serverActions ?? []) },
        stale: holds,
        staleNote: hasPacket
          ? `Stale: from a Lamina server that is no longer running. Nothing updates it and its lines may have moved; Set Task, Copy Packet, Show Packet and the workflow links are off until the server runs again${f.task ? ' (it gets this task back then)' : ''}.`
          : null,
        canSetTask: false, packetActions: false,
      };
    }
  }
}

/** The notice's own actions first (its fix: Choose Python, Run Setup, …), then Restart Server and Show Output, each once. */
function withRestart(actions: readonly Action[]): Action[] {
  const out: Action[] = [];
  for (const a of [...actions, RESTART, SHOW_OUTPUT]) if (!out.some((o) => o.kind === a.kind)) out.push(a);
  return out;
}

/**
 * The `lamina-packet:` document while the server is not running: says so first, then the last
 * packet markdown it showed (if any), marked stale. `phase` is never 'running' here.
 */
export function packetDocWhileDown(phase: ServerPhase, problem: string | null | undefined, folder: string, last: string | undefined): string {
  const why = phase === 'starting'
    ? 'The Lamina server is starting; this document is updated once it runs.'
    : `**${NOT_RUNNING}**${problem ? `: ${problem.trim()}` : '.'} Run **Lamina: Restart Server** once the cause is fixed.`;
  if (!last) return `# Lamina packet\n\n${why}\n\nNo packet for ${folder} meanwhile.\n`;
  return `> **Stale packet** from a Lamina server that is no longer running: nothing updates it and its lines may have moved.\n>\n> ${why}\n\n${last}`;
}
