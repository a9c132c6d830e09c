#!/usr/bin/env bash
# Soak: the crash-consistency test (tests/integration/crash_consistency.sh) with N kills
# instead of ten: the daemon is killed with SIGKILL at random moments under a stream of
# submits, cancels and gateway key changes, restarted each time, and then checked: every
# acknowledged change there, nothing half-written, no pod ever run twice at once (each
# pod holds an exclusive lock while it runs; one that finds it held says so). Prints the
# kills survived, the workloads, the pods run and the pods run twice (must be 0), and
# fails when any check does: unlike the other benchmarks, its figures are correctness.
# Usage: bench/crash_soak.sh [N]      (default 35; about 3 s a kill)
set -uo pipefail
N=${1:-35}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export GPUAAS_BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
out=$(KILLS=$N bash "$ROOT/tests/integration/crash_consistency.sh" 2>&1)
rc=$?
grep -E '^(FAIL|crash consistency:)' <<<"$out"
if ((rc != 0)); then
  echo "bench/crash_soak.sh: a check failed; the whole output:"
  echo "$out" | grep -v '^  ' | tail -60
fi
exit "$rc"
