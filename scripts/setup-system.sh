#!/usr/bin/env bash
# System packages and Node tooling the tests drive, installed only when missing (idempotent):
#   neovim      a second, independent LSP client (tests/test_neovim.py)
#   chromium, npm deps of vscode-client/, code-server   the extension's panel and end-to-end tests
# --fast: no code-server (the end-to-end run is skipped then). Needs root (or sudo) for apt.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v nvim >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq neovim >/dev/null
fi
if [ "${1:-}" = "--fast" ]; then
  bash vscode-client/scripts/ci-setup.sh --no-code-server
else
  bash vscode-client/scripts/ci-setup.sh
fi
