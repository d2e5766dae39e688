#!/usr/bin/env bash
# End to end in a real VS Code: code-server (VS Code 1.100.3) with the packaged .vsix, a copy of
# examples/shop, the real Lamina server, driven through the UI by playwright-core + Debian chromium.
# Needs: bash vscode-client/scripts/ci-setup.sh (once), the repo's .venv (bash scripts/setup.sh).
# Env: LAMINA_PYTHON (default <repo>/.venv/bin/python), KEEP=1 keeps the run folder,
#      LAMINA_UPDATE_DOCS_IMG=1 also copies the panel screenshot to docs/img/vscode-panel.png (README),
#      PREVIEW_IDLE_S=230 idles with the packet preview open before re-preparing (a probe of the preview keepalive).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$HERE/.." && pwd)
source "$HERE/scripts/e2e-env.sh"
T0=$(date +%s)
CS_BIN=$E2E_HOME/srv/node_modules/.bin/code-server
[ -x "$CS_BIN" ] || { echo "code-server is not installed: run bash vscode-client/scripts/ci-setup.sh"; exit 1; }
PY=${LAMINA_PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || { echo "no Python with Lamina at $PY: run bash scripts/setup.sh"; exit 1; }
# the installed model lives in the user's data dir, which code-server's XDG_DATA_HOME would hide
if [ -z "${LAMINA_MODEL_DIR:-}" ]; then
  LAMINA_MODEL_DIR=$(XDG_DATA_HOME=$ORIG_XDG_DATA_HOME "$PY" -c 'from index.embedding import default_model_dir; print(default_model_dir())')
  [ -n "$ORIG_XDG_DATA_HOME" ] || LAMINA_MODEL_DIR=$(env -u XDG_DATA_HOME "$PY" -c 'from index.embedding import default_model_dir; print(default_model_dir())')
  export LAMINA_MODEL_DIR
fi
VSIX=$HERE/dist/lamina.vsix
[ -f "$VSIX" ] || ( cd "$HERE" && npm run --silent package >/dev/null )

RUN=$(mktemp -d "$E2E_HOME/run.XXXXXX")
DATA=$RUN/data; EXTS=$RUN/exts; WS=$RUN/shop
mkdir -p "$DATA/User" "$EXTS" "$HERE/artifacts"
rm -f "$HERE"/artifacts/e2e-*   # this run's screenshots and results only
cp -r "$REPO/examples/shop" "$WS"
# a real repository, as a user would have it (the server records HEAD as the source revision)
git -C "$WS" init -q && git -C "$WS" add -A && git -C "$WS" -c user.name=e2e -c user.email=e2e@localhost commit -qm "shop"
cat > "$DATA/User/settings.json" <<JSON
{
  "workbench.startupEditor": "none",
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "workbench.tips.enabled": false,
  "git.enabled": false,
  "editor.codeLens": true,
  "editor.minimap.enabled": false,
  "editor.hover.delay": 200,
  "lamina.python": "$PY",
  "lamina.indexDirectory": "$RUN/index"
}
JSON
# lamina.python / lamina.indexDirectory are machine-overridable: code-server is a remote window, whose
# machine settings (data/Machine) are the ones that count
mkdir -p "$DATA/Machine" && cp "$DATA/User/settings.json" "$DATA/Machine/settings.json"
# a Python whose model folder is empty: the server runs lexical_degraded (the drive checks the warning)
mkdir -p "$RUN/no-model"
printf '#!/bin/sh\nLAMINA_MODEL_DIR=%s exec %s "$@"\n' "$RUN/no-model" "$PY" > "$RUN/python-no-model" && chmod +x "$RUN/python-no-model"
# which lamina/<name> requests the server answers: the drive skips (by name) the steps needing others
MISSING=$("$PY" "$HERE/e2e/probe_server.py" "$WS")
echo "server lacks: $MISSING"
"$CS_BIN" --config "$E2E_HOME/config.yaml" --user-data-dir "$DATA" --extensions-dir "$EXTS" --install-extension "$VSIX" --force >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setsid "$CS_BIN" --config "$E2E_HOME/config.yaml" --auth none --bind-addr "127.0.0.1:$PORT" \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  --user-data-dir "$DATA" --extensions-dir "$EXTS" "$WS" > "$RUN/code-server.log" 2>&1 < /dev/null &
CS_PID=$!
cleanup() {
  kill -- -"$CS_PID" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "run folder kept: $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null || { cat "$RUN/code-server.log"; exit 1; }
echo "=== [$(( $(date +%s) - T0 ))s] code-server 127.0.0.1:$PORT, workspace $WS"
set +e
CS_URL="http://127.0.0.1:$PORT" CS_PGID="$CS_PID" WS_DIR="$WS" ARTIFACTS="$HERE/artifacts" SERVER_MISSING="$MISSING" \
  DOCS_IMG="${LAMINA_UPDATE_DOCS_IMG:+$REPO/docs/img/vscode-panel.png}" USER_SETTINGS="$DATA/User/settings.json" NO_MODEL_PYTHON="$RUN/python-no-model" node "$HERE/e2e/drive.mjs"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  # CI keeps only the end of the output: the last status's fields, then the channel's events
  LOGS=$(find "$DATA/logs" -name '*Lamina*' 2>/dev/null)
  if [ -n "$LOGS" ]; then
    echo "--- Lamina output channel, the last context status:"
    # shellcheck disable=SC2086
    grep -hE '^  "(history[a-z_]*|generation|files|freshness|writer)"|^    "(mode|watcher|sync_batches|syncing|last_error|recovered)"' $LOGS | tail -16 || true
    echo "--- Lamina output channel, its last events:"
    # shellcheck disable=SC2086
    grep -hE '^[0-9]{4}-[0-9]{2}-[0-9]{2} ' $LOGS | cut -c1-300 | tail -30 || true
  fi
fi
echo "=== e2e finished in $(( $(date +%s) - T0 ))s (exit $rc)"
exit $rc
