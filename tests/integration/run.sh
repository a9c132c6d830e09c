#!/usr/bin/env bash
# Runs every integration test (tests/integration/*.sh except the helpers) against
# $GPUAAS_BIN and prints one summary line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")"
: "${GPUAAS_BIN:?set GPUAAS_BIN}"
total_pass=0 total_fail=0 failed_files=()
for t in *.sh; do
  [[ "$t" == run.sh || "$t" == lib.sh ]] && continue
  [[ -n "${ONLY:-}" && "$t" != *"$ONLY"* ]] && continue
  echo "== $t"
  out=$(bash "$t" 2>&1); rc=$?
  echo "$out"
  p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^FAIL ' <<<"$out")
  if ((rc != 0 && f == 0)); then f=1; echo "FAIL $t exited with $rc"; fi
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  ((rc != 0)) && failed_files+=("$t")
done
echo
((${#failed_files[@]})) && echo "failed: ${failed_files[*]}"
echo "integration: $total_pass passed, $total_fail failed"
((total_fail == 0))
