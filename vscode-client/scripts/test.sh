#!/usr/bin/env bash
# The VS Code extension's tests: typecheck, unit tests, the panel in headless Chromium, the packaged
# .vsix and its manifest, then (unless --fast) the end-to-end run in code-server.
# Needs: bash vscode-client/scripts/ci-setup.sh (once; --fast needs only chromium + npm ci),
#        and the repo's .venv for the end-to-end run (bash scripts/setup.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$HERE"
FAST=0; [ "${1:-}" = "--fast" ] && FAST=1
T0=$(date +%s); step() { echo "=== [vscode-client $(( $(date +%s) - T0 ))s] $*"; }
[ -d node_modules ] || { echo "node_modules missing: run bash vscode-client/scripts/ci-setup.sh"; exit 1; }
step "typecheck + bundles"
npx --no-install tsc -p . --noEmit
node esbuild.mjs
step "unit tests"
node test/run.mjs unit
step "panel in headless Chromium (screenshots in artifacts/)"
node test/run.mjs panel
step "package the .vsix + manifest test"
npm run --silent package >/dev/null
ls -l dist/lamina.vsix | awk '{print "dist/lamina.vsix: " $5 " bytes"}'
node --test test/manifest.test.mjs
if [ $FAST = 1 ]; then step "done (--fast: no code-server run)"; exit 0; fi
step "end to end in code-server"
bash e2e/run.sh
step "done"
