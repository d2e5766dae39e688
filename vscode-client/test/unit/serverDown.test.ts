/**
 * A server that stopped, crashed or could not start: the phases the manager reports for what the
 * language client does by itself, what the panel makes of them (not running, the fix, the last
 * packet kept but stale, the actions that need the server off) and the status bar's item.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LibraryRestarts, type ClientState } from '../../src/logic/lifecycle';
import { serverView, holdsServerState, packetDocWhileDown, type ServerFacts } from '../../src/logic/serverView';
import { statusView } from '../../src/logic/status';
import { noticeFromStartFailure, crashNotice } from '../../src/logic/serverMessages';

const run = (w: LibraryRestarts, states: ClientState[]): (string | undefined)[] => states.map((s) => w.change(s));

test('a crashed server: "stopped" at once, then the library\'s restart; a restart that does not come up is "failed", never "starting" for ever', () => {
  const w = new LibraryRestarts();
  assert.deepEqual(run(w, ['starting', 'running']), [undefined, undefined], 'the manager\'s own start reports itself');
  // the process dies and the library restarts it (CloseAction.Restart): nothing runs meanwhile
  assert.deepEqual(run(w, ['stopped', 'starting', 'running']), ['stopped', 'starting', 'running']);
  // the process dies and the new one does not start (State.StartFailed): the old code stayed at "starting"
  assert.deepEqual(run(w, ['stopped', 'starting', 'startFailed']), ['stopped', 'starting', 'failed']);
  // the manager refused the restart (3 crashes in 3 minutes) and said "failed" first: the client's stop adds nothing
  const refused = new LibraryRestarts();
  run(refused, ['starting', 'running']);
  refused.markFailed();
  assert.deepEqual(run(refused, ['stopped']), [undefined], '"failed" with its notice must not become a bare "stopped"');
  // `initialize` refused during a restart: the manager says "failed"; the start failure that follows adds nothing
  const init = new LibraryRestarts();
  run(init, ['starting', 'running', 'stopped', 'starting']);
  init.markFailed();
  assert.deepEqual(run(init, ['startFailed']), [undefined]);
  // and a later restart that runs clears it
  assert.deepEqual(run(init, ['starting', 'running', 'stopped']), ['starting', 'running', 'stopped']);
  // the manager's own start that fails: it reports that itself (with the reason)
  assert.deepEqual(run(new LibraryRestarts(), ['starting', 'startFailed']), [undefined, undefined]);
});

const PACKET = { task: 'Refund twice', selection: {} };
const facts = (o: Partial<ServerFacts>): ServerFacts => ({ server: 'running', serverProblem: null, serverActions: [], task: 'Refund twice', packetState: 'ready', packet: PACKET, index: { generation: 1 }, ...o });

test('panel state from the server\'s phase: running is normal; stopped or failed says so with the fix and marks what it holds stale', () => {
  assert.deepEqual(serverView(facts({})), { banner: null, stale: false, staleNote: null, canSetTask: true, packetActions: true });
  // the first start: nothing held yet, nothing stale; a task typed now is sent once it runs
  const first = serverView(facts({ server: 'starting', task: '', packetState: 'none', packet: null, index: null }));
  assert.equal(first.banner!.title, 'Starting the Lamina server…');
  assert.equal(first.stale, false);
  assert.equal(first.canSetTask, true);

  const failure = noticeFromStartFailure('failed', 'spawn /x/python ENOENT', { setupDir: '/src/lamina' });
  const failed = serverView(facts({ server: 'failed', serverProblem: failure.text, serverActions: failure.actions }));
  assert.equal(failed.banner!.tone, 'error');
  assert.equal(failed.banner!.title, 'The Lamina server is not running.');
  assert.equal(failed.banner!.text, failure.text, 'the error, and what to do');
  assert.deepEqual(failed.banner!.actions.map((a) => a.title), ['Setup Instructions', 'Choose Python', 'Run Setup', 'Restart Server', 'Show Output']);
  assert.equal(failed.stale, true);
  assert.match(failed.staleNote!, /^Stale: from a Lamina server that is no longer running\..*off until the server runs again \(it gets this task back then\)\.$/);
  assert.equal(failed.canSetTask, false);
  assert.equal(failed.packetActions, false);
  // a crash the manager does not restart: its own actions first, each once
  const crashed = noticeFromStartFailure('crashed', 'it stopped 3 times within 3 minutes');
  assert.deepEqual(serverView(facts({ server: 'failed', serverProblem: crashed.text, serverActions: crashed.actions })).banner!.actions.map((a) => a.kind), ['restartServer', 'showOutput']);
  // the process just died (the library restarts it): a warning with the crash notice's words
  const stopped = serverView(facts({ server: 'stopped', serverProblem: crashNotice(1, 3).text, serverActions: crashNotice(1, 3).actions }));
  assert.equal(stopped.banner!.tone, 'warning');
  assert.match(stopped.banner!.text, /stopped unexpectedly; restarting it/);
  assert.equal(stopped.stale, true);
  // no problem given: still plain words, never an empty banner
  assert.match(serverView(facts({ server: 'failed' })).banner!.text, /could not start: the Lamina output has the details/);
  assert.match(serverView(facts({ server: 'stopped' })).banner!.text, /Restart Server starts it again/);
  // restarting with a packet from the old server: stale until the new packet, but a task may be typed
  const restarting = serverView(facts({ server: 'starting' }));
  assert.equal(restarting.banner!.title, 'Restarting the Lamina server…');
  assert.equal(restarting.stale, true);
  assert.equal(restarting.canSetTask, true);
  assert.equal(restarting.packetActions, false);
  // a packet being prepared or a packet error, or an index state alone, are the old server's too
  assert.equal(serverView(facts({ server: 'failed', packet: null, packetState: 'preparing' })).stale, true);
  assert.equal(serverView(facts({ server: 'failed', packet: null, packetState: 'error' })).stale, true);
  const indexOnly = serverView(facts({ server: 'failed', packet: null, packetState: 'none', task: '' }));
  assert.equal(indexOnly.stale, true);
  assert.equal(indexOnly.staleNote, null, 'no packet: nothing to say above it');
  assert.equal(holdsServerState({ packet: null, packetState: 'cleared', index: null }), false);
  assert.equal(serverView(facts({ server: 'failed', packet: null, packetState: 'none', index: null })).stale, false);
});

test('the packet document while the server is down: says so, then the last packet under a stale mark', () => {
  assert.match(packetDocWhileDown('failed', 'Lamina cannot start: x.', 'shop', '# Packet\n'), /^> \*\*Stale packet\*\* .*\n>\n> \*\*The Lamina server is not running\*\*: Lamina cannot start: x\. Run \*\*Lamina: Restart Server\*\*.*\n\n# Packet\n$/);
  assert.equal(packetDocWhileDown('stopped', null, 'shop', undefined), '# Lamina packet\n\n**The Lamina server is not running**. Run **Lamina: Restart Server** once the cause is fixed.\n\nNo packet for shop meanwhile.\n');
  assert.match(packetDocWhileDown('starting', null, 'shop', undefined), /is starting; this document is updated once it runs/);
});

test('status bar: a server that is not running never shows the last index state, and a click goes where the fix is', () => {
  const idx = [{ folder: 'file:///w/shop', generation: 3, files: 40, chunks: 300, pending: 0, retrieval: 'hybrid', freshness: 'fresh' }];
  assert.equal(statusView('running', idx, undefined).text, '$(check) Lamina: fresh · gen 3');
  assert.equal(statusView('running', idx, undefined).command, 'lamina.contextStatus');
  for (const phase of ['failed', 'stopped'] as const) {
    const v = statusView(phase, idx, { title: 'Lamina: indexing shop', percentage: 40, active: true }, 'The Lamina server stopped unexpectedly; restarting it');
    assert.equal(v.text.endsWith('Lamina: not running'), true, `${phase}: ${v.text}`);
    assert.match(v.tooltip, /^The Lamina server stopped unexpectedly; restarting it\nClick for the Lamina panel: Restart Server, Show Output and the fix\.$/);
    assert.equal(v.command, 'lamina.panel.focus', 'Context Status needs the server: a click shows the panel, which says why and offers the fixes');
  }
  assert.equal(statusView('starting', idx, undefined).text, '$(sync~spin) Lamina: starting');
});
