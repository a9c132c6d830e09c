#!/usr/bin/env bash
# tests/gpu/run.sh, the real-GPU check, run here against stand-ins (tests/gpu/dry-run.sh)
# so it is known to work before a GPU machine runs it; and its skip without nvidia-smi.
source "$(dirname "$0")/lib.sh"
# a PATH with only what run.sh needs before its skip (on merged-/usr systems /bin has nvidia-smi)
mkdir -p "$TMP/bin" && ln -sf "$(command -v dirname)" "$TMP/bin/dirname"
out=$(env PATH="$TMP/bin" "$BASH" "$ROOT/tests/gpu/run.sh" 2>&1); rc=$?
expect_eq "no nvidia-smi: skips with status 0" "$rc" 0
expect_match "and says why" "$out" "gpu-check: skip: no nvidia-smi"
check "run.sh parses" bash -n "$ROOT/tests/gpu/run.sh"
out=$(GPUAAS_BIN=$GPUAAS_BIN bash "$ROOT/tests/gpu/dry-run.sh" 2>&1); rc=$?
expect_eq "the dry run passes" "$rc" 0
for mode in exclusive time-slicing mps; do
  expect_match "$mode: 4 jobs measured" "$out" "gpu-check: $mode +4 jobs in +[0-9.]+ s +throughput +[0-9.]+ jobs/min +mean GPU util 50% +failed 0"
done
expect_match "MPS clients get their share" "$out" "burn-1: kernel 500 ms on GPU-[0-9a-f-]+ mps=25"
expect_match "compute mode set for MPS" "$out" "compute mode Default -> Exclusive_Process"
expect_match "and restored" "$out" "compute mode restored to Default"
expect_match "settings as found" "$out" "gpu-check: GPU settings unchanged: 0, Disabled, Default;"
((FAILS)) && echo "$out"
finish
