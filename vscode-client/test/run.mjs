// Bundles test/<suite>/*.test.ts with esbuild (TypeScript; `vscode` never imported by the tested code)
// and runs them with node's built-in test runner.   Usage: node test/run.mjs unit|panel
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'fs';
import { spawnSync } from 'child_process';
import path from 'path';

const suite = process.argv[2] ?? 'unit';
const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.dirname(here);
const out = path.join(root, 'out', suite);
rmSync(out, { recursive: true, force: true });
const files = readdirSync(path.join(here, suite)).filter((f) => f.endsWith('.test.ts'));
await esbuild.build({
  entryPoints: files.map((f) => path.join(here, suite, f)), outdir: out, bundle: true, platform: 'node',
  format: 'esm', target: 'node20', outExtension: { '.js': '.mjs' }, external: ['vscode', 'playwright-core', 'esbuild'],
  logLevel: 'warning', sourcemap: 'inline',
});
const r = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=1', ...files.map((f) => path.join(out, f.replace(/\.ts$/, '.mjs')))], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
