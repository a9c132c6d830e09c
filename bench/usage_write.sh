#!/usr/bin/env bash
# Benchmark: CPU per usage record of the gateway's writer (the store's gx_store_put_usage)
# against one plain SQLite table, in the same run (bench/usage_write.c; `make bench`
# builds it). Usage: bench/usage_write.sh [ROWS=90000] [ROUNDS=5]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${USAGE_BENCH_BIN:-$(dirname "${GPUAAS_BIN:-$ROOT/build/gpuaas}")/bench-usage-write}
[[ -x $BIN ]] || { echo "bench/usage_write: $BIN is missing (make bench builds it)"; exit 1; }
exec "$BIN" "${1:-90000}" "${2:-5}"
