#!/usr/bin/env bash
# The main job on the bundled example workspace: set up, index it, search it, print a packet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
WS=examples/shop
export LAMINA_INDEX_DIR=${LAMINA_INDEX_DIR:-$PWD/.lamina-cache/example-index}
.venv/bin/lamina context rebuild --workspace "$WS"
.venv/bin/lamina context status --workspace "$WS"
echo
echo '$ lamina search "refund a captured payment" --workspace examples/shop'
.venv/bin/lamina search "refund a captured payment" --workspace "$WS" --top-k 8
echo
echo '$ lamina work prepare "Refund a payment that was captured twice" --workspace examples/shop'
.venv/bin/lamina work prepare "Refund a payment that was captured twice" --workspace "$WS" --mode summary
