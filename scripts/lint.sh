#!/usr/bin/env bash
# Static checks, pinned in pyproject's dev extra: ruff (lint + format check) on all Python
# sources, mypy --strict on the engine (index/). Run after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
