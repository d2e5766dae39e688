/** What the extension and the panel's webview say to each other (no VS Code API: shared by both sides). */
import type { IndexState, LaminaErrorData, Packet, PacketState } from '../protocol';
import type { Action, ActionKind } from '../logic/serverMessages';

export interface PanelState {
  folder: string | null;
  task: string;
  packetState: PacketState;
  packet: Packet | null;
  error: LaminaErrorData | null;
  index: IndexState | null;
  server: 'starting' | 'running' | 'stopped' | 'failed';
  /** Why the server is not running, in words that say what to do (stopped or failed). */
  serverProblem?: string | null;
  /** That problem's actions (Choose Python, Run Setup, …); the panel adds Restart Server and Show Output. */
  serverActions?: Action[];
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
  | { type: 'showPacket' }
  /** A button of the "not running" banner. */
  | { type: 'serverAction'; kind: ActionKind };

export const EMPTY_STATE: PanelState = {
  folder: null, task: '', packetState: 'none', packet: null, error: null, index: null, server: 'starting',
};
