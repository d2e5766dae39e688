#!/usr/bin/env bash
# Everything the extension's tests need, offline-friendly and idempotent (a rerun skips what is done):
#   apt: chromium (playwright-core drives it), ripgrep (stands in for @vscode/ripgrep's GitHub download),
#        libkrb5-dev + build tools (code-server's native modules);
#   npm ci in vscode-client/ (exact versions from package-lock.json);
#   code-server $CS_VERSION (VS Code 1.100.3 on Node 20) under $E2E_HOME, for the end-to-end test.
# Usage: bash vscode-client/scripts/ci-setup.sh [--no-code-server]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$HERE/scripts/e2e-env.sh"
T0=$(date +%s); step() { echo "=== [ci-setup $(( $(date +%s) - T0 ))s] $*"; }

NO_CS=0; [ "${1:-}" = "--no-code-server" ] && NO_CS=1
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
step "apt packages"
need=()
[ -x "$CHROMIUM" ] || need+=(chromium)                        # the panel test and the e2e drive it
command -v python3 >/dev/null || need+=(python3)
if [ $NO_CS = 0 ]; then                                       # code-server's install builds native modules
  command -v g++ >/dev/null && command -v make >/dev/null || need+=(build-essential)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  [ -f /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)  # native module 'kerberos'
  command -v rg >/dev/null || need+=(ripgrep)                  # seeds @vscode/ripgrep's download cache
fi
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${need[@]}"
fi

step "npm ci (vscode-client)"
if [ ! -f "$HERE/node_modules/.package-lock.json" ] || ! cmp -s "$HERE/package-lock.json" "$HERE/node_modules/.lamina-lock"; then
  ( cd "$HERE" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund )
  cp "$HERE/package-lock.json" "$HERE/node_modules/.lamina-lock"
fi

[ $NO_CS = 1 ] && { step "done (no code-server)"; exit 0; }

CS_BIN=$E2E_HOME/srv/node_modules/.bin/code-server
VSCODE_DIR=$E2E_HOME/srv/node_modules/code-server/lib/vscode
if [ -x "$CS_BIN" ] && [ -x "$VSCODE_DIR/node_modules/@vscode/ripgrep/bin/rg" ] \
   && [ -f "$VSCODE_DIR/node_modules/node-pty/build/Release/pty.node" ]; then
  step "code-server $CS_VERSION already installed in $E2E_HOME/srv"
else
  step "install code-server $CS_VERSION into $E2E_HOME/srv (builds native modules, ~1-3 min)"
  mkdir -p "$E2E_HOME/srv"
  # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache holds the archive:
  # pre-seed $TMPDIR/vscode-ripgrep-cache-<npm version>/ripgrep-<tag>-<target>.tar.gz with Debian's rg.
  RGC="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$RG_NPM_VERSION"
  mkdir -p "$RGC"
  tar czf "$RGC/ripgrep-$RG_TAG-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
  [ -f "$E2E_HOME/srv/package.json" ] || echo '{"name":"lamina-code-server-host","private":true}' > "$E2E_HOME/srv/package.json"
  # root needs npm_config_unsafe_perm=true (code-server's postinstall checks it); node-pty's postinstall
  # runs `npx node-gyp` which asks for confirmation without npm_config_yes=true (no TTY in CI).
  ( cd "$E2E_HOME/srv" && npm_config_unsafe_perm=true npm_config_yes=true \
      npm install --foreground-scripts --no-audit --no-fund "code-server@$CS_VERSION" ) > "$E2E_HOME/install-cs.log" 2>&1 \
    || { tail -40 "$E2E_HOME/install-cs.log"; echo "code-server install FAILED, see $E2E_HOME/install-cs.log"; exit 1; }
fi
"$CS_BIN" --config "$E2E_HOME/config.yaml" --version | head -1
step "done"
