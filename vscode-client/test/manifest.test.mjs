// Checks the packaged .vsix (built by `npm run package`): its manifest contributes every command, the
// view, the settings and the activation events; no node_modules / sources / tests inside; a sane size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const VSIX = path.join(ROOT, 'dist', 'lamina.vsix');
const pyZip = (script) => execFileSync('python3', ['-c', script, VSIX], { encoding: 'utf8' });

test('the .vsix exists and stays small', () => {
  assert.ok(existsSync(VSIX), 'run `npm run package` first');
  const size = statSync(VSIX).size;
  assert.ok(size > 20_000 && size < 1_000_000, `vsix size ${size} bytes`);
});

const files = () => JSON.parse(pyZip('import sys, zipfile, json; print(json.dumps(zipfile.ZipFile(sys.argv[1]).namelist()))'));
const manifest = () => JSON.parse(pyZip('import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("extension/package.json").decode())'));

test('only the bundles, media, README, LICENSE and the manifest are inside: no dependencies, sources or tests', () => {
  const names = files().filter((n) => n.startsWith('extension/'));
  assert.deepEqual(names.filter((n) => /node_modules|\/src\/|\/test\/|\/e2e\/|\.map$|\.ts$|tsconfig|esbuild\.mjs|artifacts|\.vsix$/.test(n)), []);
  for (const need of ['extension/package.json', 'extension/dist/extension.js', 'extension/dist/panel.js', 'extension/media/panel.css', 'extension/media/icon.svg', 'extension/readme.md', 'extension/LICENSE.txt']) {
    assert.ok(names.includes(need), `${need} in ${names}`);
  }
  // the bundle really carries vscode-languageclient (it is not a runtime dependency any more)
  const bundle = pyZip('import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("extension/dist/extension.js").decode()[:0] or len(zipfile.ZipFile(sys.argv[1]).read("extension/dist/extension.js")))');
  assert.ok(Number(bundle) > 100_000);
});

test('manifest: commands, view container, view, settings, activation events', () => {
  const m = manifest();
  const src = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(m.main, './dist/extension.js');
  assert.equal(m.engines.vscode, '^1.91.0');
  const cmds = Object.fromEntries(m.contributes.commands.map((c) => [c.command, `${c.category}: ${c.title}`]));
  const expected = {
    'lamina.setTask': 'Lamina: Set Task', 'lamina.clearTask': 'Lamina: Clear Task', 'lamina.preparePacket': 'Lamina: Prepare Packet',
    'lamina.selectWorkflow': 'Lamina: Select Workflow…', 'lamina.goToRelevantWorkflow': 'Lamina: Go to Relevant Workflow',
    'lamina.showPacket': 'Lamina: Show Packet', 'lamina.copyPacket': 'Lamina: Copy Packet for Agent', 'lamina.search': 'Lamina: Search Code…',
    'lamina.contextStatus': 'Lamina: Context Status', 'lamina.rebuildContext': 'Lamina: Rebuild Context',
    'lamina.revealSpan': 'Lamina: Reveal Span in Panel', 'lamina.showWorkflow': 'Lamina: Show Workflow',
  };
  for (const [id, title] of Object.entries(expected)) assert.equal(cmds[id], title, id);
  // every contributed command activates the extension, and so do .lamina/ and source files
  for (const id of Object.keys(cmds)) assert.ok(m.activationEvents.includes(`onCommand:${id}`), `onCommand:${id}`);
  assert.ok(m.activationEvents.includes('workspaceContains:.lamina'));
  assert.ok(m.activationEvents.some((e) => e.startsWith('workspaceContains:**/*.py')));
  // the lens-only commands take arguments: hidden from the palette
  assert.deepEqual(m.contributes.menus.commandPalette.map((c) => c.command).sort(), ['lamina.revealSpan', 'lamina.showWorkflow']);
  assert.deepEqual(m.contributes.viewsContainers.activitybar, [{ id: 'lamina', title: 'Lamina', icon: 'media/icon.svg' }]);
  assert.deepEqual(m.contributes.views.lamina.map((v) => [v.type, v.id]), [['webview', 'lamina.panel']]);
  const props = m.contributes.configuration.properties;
  assert.deepEqual(Object.keys(props).sort(), ['lamina.budget', 'lamina.historyMaxCommits', 'lamina.historyMaxYears', 'lamina.ignore', 'lamina.indexDirectory', 'lamina.packetMode', 'lamina.packetView', 'lamina.python', 'lamina.rankedLenses', 'lamina.topK']);
  // Unset by default: the server's environment, else its own default, decides (docs/lsp.md).
  assert.deepEqual([props['lamina.historyMaxCommits'].default, props['lamina.historyMaxCommits'].minimum, props['lamina.historyMaxCommits'].maximum], [null, 1, 1000000]);
  assert.deepEqual([props['lamina.historyMaxYears'].default, props['lamina.historyMaxYears'].minimum, props['lamina.historyMaxYears'].maximum], [null, 0, 100]);
  for (const [k, v] of Object.entries(props)) assert.ok((v.markdownDescription ?? v.description ?? '').length > 40, `${k} has a description`);
  assert.deepEqual(props['lamina.packetMode'].enum, ['summary', 'standard', 'full']);
  assert.deepEqual(props['lamina.packetView'].enum, ['preview', 'source']);
  assert.equal(props['lamina.packetView'].default, 'preview');
  // what the .vsix says is what package.json says; dev dependencies are not shipped
  assert.deepEqual(m.contributes, src.contributes);
  assert.equal(m.version, src.version);
});
