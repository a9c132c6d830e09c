#!/usr/bin/env bash
# tests/gpu/cuda_shim_check.sh without a GPU: the same script against stand-ins
# (tests/gpu/fake's nvidia-smi and nvcc, whose program plays libgpuaas-cuda.so's part on
# each pod's region; an empty library beside a copy of gpuaas is what gets injected), so
# its flow (daemons, workloads, the view's figures, settings compared) is exercised in CI.
# The figures it prints mean nothing. Usage: GPUAAS_BIN=build/gpuaas tests/gpu/cuda-shim-dry-run.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
D=$(mktemp -d /tmp/gxcdry.XXXXXX)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/bin" "$D/state" && chmod 755 "$D" "$D/bin"
cp "$BIN" "$(dirname "$BIN")/gpuaas-shim" "$D/bin/"
echo 'int gpuaas_cuda_standin;' > "$D/standin.c"
cc -shared -fPIC -o "$D/bin/libgpuaas-cuda.so" "$D/standin.c" || { echo "dry-run: cannot build the stand-in library" >&2; exit 1; }
PATH="$ROOT/tests/gpu/fake:$PATH" FAKE_NVML_STATE="$D/state" GPUAAS_BIN="$D/bin/gpuaas" bash "$ROOT/tests/gpu/cuda_shim_check.sh"
