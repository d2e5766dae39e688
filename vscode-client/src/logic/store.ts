/**
 * The client's memory of the server's per-folder state: the current task's packet (from
 * `lamina/packetChanged` + `lamina/getPacket`) and the index state (from `lamina/indexState`).
 */
import type { GetPacketResult, IndexState, LaminaErrorData, Packet, PacketChanged, PacketState } from '../protocol';

export interface FolderPacket {
  task: string;
  /** The workflow picked by hand for the task (Select Workflow…); '' = automatic selection. */
  workflow: string;
  state: PacketState;
  packetId: string | null;
  packet: Packet | null;
  error: LaminaErrorData | null;
}

const EMPTY: FolderPacket = { task: '', workflow: '', state: 'none', packetId: null, packet: null, error: null };

export class Store {
  private packets = new Map<string, FolderPacket>();
  private index = new Map<string, IndexState>();
  /** The folder the panel shows: the last one a task was set in or a packet changed in. */
  current: string | null = null;

  packetOf(folder: string | null | undefined): FolderPacket {
    return (folder && this.packets.get(norm(folder))) || EMPTY;
  }

  indexOf(folder: string | null | undefined): IndexState | null {
    if (folder) return this.index.get(norm(folder)) ?? null;
    return null;
  }

  indexStates(): IndexState[] { return [...this.index.values()]; }

  taskSet(folder: string, task: string, workflow = ''): void {
    this.current = folder;
    this.packets.set(norm(folder), { ...this.packetOf(folder), task, workflow, state: 'preparing', error: null });
  }

  /** Each folder's current task (and the workflow picked for it), for a restarted server. */
  tasks(): { folder: string; task: string; workflow: string }[] {
    return [...this.packets].filter(([, p]) => p.task && p.state !== 'cleared').map(([folder, p]) => ({ folder, task: p.task, workflow: p.workflow }));
  }

  /** Returns true when the packet itself must be fetched (`state: ready` with a new id). */
  packetChanged(n: PacketChanged): boolean {
    const f = norm(n.folder);
    const prev = this.packetOf(f);
    this.current = n.folder;
    if (n.state === 'cleared') { this.packets.set(f, { ...EMPTY, state: 'cleared' }); return false; }
    const next: FolderPacket = {
      task: n.task ?? prev.task, workflow: pickedFor(prev, n.task), state: n.state, packetId: n.packetId ?? null,
      packet: n.state === 'ready' && prev.packetId === (n.packetId ?? null) ? prev.packet : (n.state === 'preparing' ? prev.packet : null),
      error: n.state === 'error' ? n.error ?? { code: 'LAMINA_ERROR', message: 'the packet could not be prepared' } : null,
    };
    this.packets.set(f, next);
    return n.state === 'ready' && (prev.packetId !== next.packetId || prev.packet === null);
  }

  /** A `lamina/getPacket` answer; ignored when a newer packet was announced meanwhile. */
  packetFetched(r: GetPacketResult): boolean {
    const f = norm(r.folder);
    const prev = this.packetOf(f);
    if (prev.packetId && r.packetId && prev.packetId !== r.packetId) return false;
    this.packets.set(f, {
      task: r.task ?? prev.task, workflow: pickedFor(prev, r.task), state: r.state, packetId: r.packetId ?? prev.packetId,
      packet: r.packet ?? (r.state === 'ready' ? prev.packet : null), error: r.error ?? null,
    });
    return true;
  }

  cleared(folder: string): void { this.packets.set(norm(folder), { ...EMPTY, state: 'cleared' }); }

  indexChanged(s: IndexState): void { this.index.set(norm(s.folder), s); }

  reset(): void { this.packets.clear(); this.index.clear(); }
}

/** The workflow picked by hand stays with its task: a packet for another task drops it. */
function pickedFor(prev: FolderPacket, task: string | undefined): string {
  return task === undefined || task === prev.task ? prev.workflow : '';
}

/** Folder URIs compare without a trailing slash. */
export function norm(uri: string): string { return uri.replace(/\/+$/, ''); }
