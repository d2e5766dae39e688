// Two bundles: the extension (Node, CommonJS, `vscode` external) and the panel's webview script (browser IIFE).
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: 'warning', legalComments: 'none' };

await Promise.all([
  esbuild.build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'] }),
  esbuild.build({ ...common, entryPoints: ['src/panel/main.ts'], outfile: 'dist/panel.js', platform: 'browser', format: 'iife', target: 'es2022' }),
]);
console.log(`built dist/extension.js and dist/panel.js${production ? ' (production)' : ''}`);
