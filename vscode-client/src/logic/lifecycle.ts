/**
 * The language client restarts a server that died by itself (`CloseAction.Restart`), without the
 * manager's `start()`: its state goes Running -> Stopped -> Starting -> Running. This tells the
 * manager which phases to report then, so the status bar, the panel and the restored task follow a
 * crash as they follow a restart the manager made itself (which reports its own phases).
 */
import type { ServerPhase } from './status';

export type ClientState = 'stopped' | 'starting' | 'running';

export class LibraryRestarts {
  private ranOnce = false;

  /** The phase to report for the client's new state, if any. */
  change(state: ClientState): ServerPhase | undefined {
    if (state === 'running') {
      if (this.ranOnce) return 'running';
      this.ranOnce = true;  // the manager's own start: it reports 'running' itself
      return undefined;
    }
    if (state === 'starting' && this.ranOnce) return 'starting';
    return undefined;
  }
}
