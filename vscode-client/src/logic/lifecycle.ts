/**
 * The language client restarts a server that died by itself (`CloseAction.Restart`), without the
 * manager's `start()`: its state goes Running -> Stopped -> Starting -> Running, or -> StartFailed
 * when the new process does not come up. This tells the manager which phases to report then, so the
 * status bar, the panel and the restored task follow a crash as they follow a restart the manager
 * made itself (which reports its own phases): a dead server is never shown as running or starting.
 */
import type { ServerPhase } from './status';

export type ClientState = 'stopped' | 'starting' | 'running' | 'startFailed';

export class LibraryRestarts {
  private ranOnce = false;
  private failed = false;

  /**
   * The manager reported the failure itself (restarts used up, `initialize` refused): the client's
   * own stop that follows says nothing new and must not turn "failed" back into "stopped".
   */
  markFailed(): void { this.failed = true; }

  /** The phase to report for the client's new state, if any. */
  change(state: ClientState): ServerPhase | undefined {
    if (state === 'running') {
      this.failed = false;
      if (this.ranOnce) return 'running';
      this.ranOnce = true;  // the manager's own start: it reports 'running' itself
      return undefined;
    }
    if (!this.ranOnce) return undefined;  // the manager's own start reports its phases and its failure itself
    if (state === 'starting') { this.failed = false; return 'starting'; }
    if (this.failed) return undefined;
    // the process ended (the library restarts it, or the manager refuses and says 'failed' first),
    // or the library's restart did not come up: nothing runs any more
    return state === 'stopped' ? 'stopped' : 'failed';
  }
}
