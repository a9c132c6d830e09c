#!/usr/bin/env bash
# tests/gpu/run.sh, the real-GPU check, run here against stand-ins (tests/gpu/dry-run.sh)
# so it is known to work before a GPU machine runs it; and its skip without nvidia-smi.
# The same for tests/gpu/cuda_shim_check.sh (tests/gpu/cuda-shim-dry-run.sh).
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

# tests/gpu/cuda_shim_check.sh, the CUDA shim's GPU check: its skip, and its dry run
# (tests/gpu/cuda-shim-dry-run.sh: the fake nvcc's program plays the library's part)
out=$(env PATH="$TMP/bin" "$BASH" "$ROOT/tests/gpu/cuda_shim_check.sh" 2>&1); rc=$?
expect_eq "shim check, no nvidia-smi: skips with status 0" "$rc" 0
expect_match "and says why" "$out" "cuda-shim-check: skip: no nvidia-smi"
out=$(GPUAAS_BIN=$GPUAAS_BIN bash "$ROOT/tests/gpu/cuda-shim-dry-run.sh" 2>&1); rc=$?
expect_eq "the shim check's dry run passes" "$rc" 0
expect_match "A is capped at its limit, half the GPU" "$out" "memory +A's cap 39.82 GiB of a 39.82 GiB limit"
expect_match "the view counts A's refusal" "$out" "view of A: used 42760404992 limit 42760404992 refused 1"
expect_match "B is unharmed" "$out" "B: work: 4294967296 bytes, checksum ok \(Succeeded\)"
expect_match "the overhead ratio" "$out" "overhead 3000 ns/launch without the shim, 3300 ns/launch with it: ratio 1.10"
expect_match "compute share 30 %" "$out" "compute +target 30 %, achieved 30.0 %"
expect_match "compute share 70 %" "$out" "compute +target 70 %, achieved 70.0 %"
expect_match "shim check: settings as found" "$out" "cuda-shim-check: GPU settings unchanged"
((FAILS)) && echo "$out"
finish
