#!/usr/bin/env bash
# Benchmark: how long the event loop is held by the once-a-second save of rate-limit
# windows, handed to the store's writer thread, against writing them on the loop as
# before, in the same run (bench/windows_save.c; `make bench` builds it).
# Usage: bench/windows_save.sh [WINDOWS=10000] [ROUNDS=5]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WINDOWS_BENCH_BIN:-$(dirname "${GPUAAS_BIN:-$ROOT/build/gpuaas}")/bench-windows-save}
[[ -x $BIN ]] || { echo "bench/windows_save: $BIN is missing (make bench builds it)"; exit 1; }
DIR=$(mktemp -d /tmp/gpuaas-bench-windows.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$BIN" "$DIR" "${1:-10000}" "${2:-5}"
