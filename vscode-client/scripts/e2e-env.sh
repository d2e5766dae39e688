# Shared paths and pins of the extension's test setup (sourced by ci-setup.sh and e2e/run.sh).
# code-server 4.100.3 == VS Code 1.100.3, the newest code-server that runs on Node 20.
CS_VERSION=${CS_VERSION:-4.100.3}
# @vscode/ripgrep version pinned by code-server-$CS_VERSION/lib/vscode/npm-shrinkwrap.json and the
# ripgrep-prebuilt tag its postinstall fetches (4.100.3 -> 1.15.11 / v13.0.0-10).
RG_NPM_VERSION=${RG_NPM_VERSION:-1.15.11}
RG_TAG=${RG_TAG:-v13.0.0-10}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
E2E_HOME=${LAMINA_E2E_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/lamina-vscode-e2e}
mkdir -p "$E2E_HOME"
# code-server writes its config, heartbeat and logs under XDG dirs: keep them all inside E2E_HOME.
# (The Lamina server it starts inherits them: e2e/run.sh pins LAMINA_MODEL_DIR to the user's model first.)
ORIG_XDG_DATA_HOME=${XDG_DATA_HOME-}
export XDG_CONFIG_HOME=$E2E_HOME/xdg/config XDG_DATA_HOME=$E2E_HOME/xdg/data
[ -f "$E2E_HOME/config.yaml" ] || printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' > "$E2E_HOME/config.yaml"
export CS_VERSION CHROMIUM E2E_HOME
