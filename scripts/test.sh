#!/usr/bin/env bash
# Set everything up from scratch and run the whole test suite (what CI's .ci/run calls): static
# checks (ruff lint + format, mypy --strict on index/), Python (pytest: engine, CLI, language
# server, MCP, Neovim) and the VS Code extension (unit, panel in headless Chromium, the packaged
# .vsix, and end to end in code-server).
#   --fast   skip the code-server install and end-to-end run (CI runs them)
# Other arguments go to pytest. LAMINA_SKIP_MODEL_TESTS=1 also skips the tests needing the model.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST=""; ARGS=()
for a in "$@"; do
  if [ "$a" = "--fast" ]; then FAST="--fast"; else ARGS+=("$a"); fi
done
bash scripts/setup.sh
bash scripts/lint.sh
bash scripts/setup-system.sh $FAST
.venv/bin/python -m pytest -q -p no:cacheprovider ${ARGS[@]+"${ARGS[@]}"}
bash vscode-client/scripts/test.sh $FAST
