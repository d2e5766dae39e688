/** What the extension and the panel's webview say to each other (no VS Code API: shared by both sides). */
import type { IndexState, LaminaErrorData, Packet, PacketState } from '../protocol';

export interface PanelState {
  folder: string | null;
  task: string;
  packetState: PacketState;
  packet: Packet | null;
  error: LaminaErrorData | null;
  index: IndexState | null;
  server: 'starting' | 'running' | 'stopped' | 'failed';
  serverProblem?: string | null;
  /** How many workspace folders there are: with several, the panel names the one it shows. */
  folderCount?: number;
}

export type ToPanel =
  | { type: 'state'; state: PanelState }
  | { type: 'reveal'; id: string };

export type FromPanel =
  | { type: 'ready' }
  | { type: 'setTask'; task: string }
  | { type: 'clearTask' }
  | { type: 'openSpan'; id: string; file: string; startLine: number; endLine: number }
  | { type: 'showWorkflow'; workflow: string }
  | { type: 'copyPacket' }
  | { type: 'showPacket' };

export const EMPTY_STATE: PanelState = {
  folder: null, task: '', packetState: 'none', packet: null, error: null, index: null, server: 'starting',
};
