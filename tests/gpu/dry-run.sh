#!/usr/bin/env bash
# tests/gpu/run.sh without a GPU: the same script against stand-ins (tests/gpu/fake's
# nvidia-smi and nvcc, the fake libnvidia-ml.so.1, the fake nvidia-cuda-mps-control), so
# its flow (daemon per mode, Jobs, waits, figures, MPS compute mode set and restored,
# settings compared) is exercised in CI. The figures it prints mean nothing.
# Usage: GPUAAS_BIN=build/gpuaas tests/gpu/dry-run.sh   (needs `make fakes`)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$(mktemp -d /tmp/gxdry.XXXXXX)
trap 'rm -rf "$LIB"' EXIT
[[ -f "$ROOT/build/fakes/nvml/libnvidia-ml.so.1" ]] || { echo "dry-run: run make fakes first" >&2; exit 1; }
cp "$ROOT/build/fakes/nvml/libnvidia-ml.so.1" "$LIB/"
mkdir -p "$LIB/state"
PATH="$ROOT/tests/gpu/fake:$ROOT/tests/fakes/nvml:$PATH" LD_LIBRARY_PATH="$LIB" FAKE_NVML_GPUS=H100-80GB \
  FAKE_NVML_STATE="$LIB/state" GPUAAS_BIN="${GPUAAS_BIN:-$ROOT/build/gpuaas}" bash "$ROOT/tests/gpu/run.sh"
