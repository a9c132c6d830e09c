#!/usr/bin/env bash
# The GPU check: for a machine with a real NVIDIA GPU (CI has none and skips it).
# Builds gpuaas, prints `gpuaas gpus` as NVML sees the machine, then runs the same small
# CUDA kernel (built here with nvcc) as 4 Jobs through the daemon under each of:
#   exclusive   one GPU of quota: the 4 Jobs run one after another
#   time-slicing x4 (device-plugin config, replicas 4): the 4 run at once, in turns
#   MPS x4      (device-plugin config, replicas 4): the 4 run at once as MPS clients
# and prints, per mode, the wall time, throughput (jobs/min) and mean GPU utilisation
# (nvidia-smi, sampled every 0.5 s). It changes no GPU setting: MIG mode and compute mode
# are read before and after and must be equal; a GPU in MIG mode is left alone (skip).
# Budget: under 5 minutes (build ~1 min, each mode ~10-20 s).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
say() { echo "gpu-check: $*"; }
command -v nvidia-smi >/dev/null || { say "skip: no nvidia-smi (no NVIDIA GPU here)"; exit 0; }
nvidia-smi -L >/dev/null 2>&1 || { say "skip: nvidia-smi finds no GPU"; exit 0; }
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
[[ -n "$NVCC" ]] || { say "FAIL: nvcc not found (install the CUDA toolkit)"; exit 1; }
settings() { nvidia-smi --query-gpu=index,mig.mode.current,compute_mode --format=csv,noheader; }
BEFORE=$(settings)
say "GPU settings before: $BEFORE"
if grep -q "Enabled" <<<"$(nvidia-smi -i 0 --query-gpu=mig.mode.current --format=csv,noheader)"; then
  say "skip: GPU 0 is in MIG mode; this check needs a full GPU and does not change MIG"; exit 0
fi

W=$(mktemp -d /tmp/gpuaas-gpu.XXXXXX)
PIDS=()
STATUS=0
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
say "building gpuaas"
make -s -j"$(nproc)" all >/dev/null || { say "FAIL: build"; exit 1; }
G=$ROOT/build/gpuaas

cat > "$W/burn.cu" <<'CU'
// A fixed amount of dependent FMA work on a small grid (16 blocks): one process cannot
// fill a big GPU, which is where MPS's concurrency shows against time-slicing.
#include <cstdio>
#include <cstdlib>
__global__ void burn(float *out, long iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f;
    for (long i = 0; i < iters; i++) a = fmaf(a, b, c);
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 400000000L;
    float *d;
    if (cudaMalloc(&d, 16 * 256 * sizeof(float)) != cudaSuccess) { puts("cudaMalloc failed"); return 1; }
    cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
    cudaEventRecord(s);
    burn<<<16, 256>>>(d, iters);
    cudaEventRecord(e);
    if (cudaEventSynchronize(e) != cudaSuccess) { puts("kernel failed"); return 1; }
    float ms; cudaEventElapsedTime(&ms, s, e);
    printf("kernel %.0f ms on %s\n", ms, getenv("CUDA_VISIBLE_DEVICES"));
    return 0;
}
CU
"$NVCC" -O2 -o "$W/burn" "$W/burn.cu" || { say "FAIL: nvcc"; exit 1; }

cat > "$W/node.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata: {name: gpu-box}
spec: {cpu: "16", memory: 64Gi}
YAML
for mode in timeSlicing mps; do
  cat > "$W/dp-$mode.yaml" <<YAML
version: v1
sharing:
  $mode:
    resources:
    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}
YAML
done

run_mode() {   # run_mode NAME QUOTA [DEVICE-PLUGIN FILE]
  local name=$1 quota=$2 dp=${3:-} data=$W/data-$1
  mkdir -p "$data"
  cat > "$W/queues-$name.yaml" <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "$quota"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: bench}
spec: {clusterQueue: cq}
YAML
  {
    echo "apiVersion: gpuaas.dev/v1alpha1"; echo "kind: ServerConfig"; echo "listen: 127.0.0.1:0"
    echo "dataDir: $data"
    echo "inventory: {source: nvml, nodes: $W/node.yaml${dp:+, devicePlugin: $dp}}"
    echo "manifests: [$W/queues-$name.yaml]"
  } > "$W/$name.yaml"
  "$G" serve --config "$W/$name.yaml" > "$W/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 100); do [[ -s "$data/serve.json" ]] && break; sleep 0.1; done
  if [[ ! -s "$data/serve.json" ]]; then
    say "FAIL: $name: the daemon did not start:"; tail -5 "$W/$name.log"; STATUS=1; return
  fi
  export GPUAAS_SERVER GPUAAS_TOKEN
  GPUAAS_SERVER=$(sed 's/.*"url": "\([^"]*\)".*/\1/' "$data/serve.json")
  GPUAAS_TOKEN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$W/$name.log" | tail -1)
  [[ $name == exclusive ]] && { say "gpuaas gpus (NVML):"; "$G" gpus -o wide; }
  grep -E "NVML|mps:" "$W/$name.log" | sed 's/^/  /'
  nvidia-smi -i 0 --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 > "$W/util-$name" 2>/dev/null &
  local smi=$!
  PIDS+=("$smi")
  local t0; t0=$(date +%s.%N)
  for i in 1 2 3 4; do
    cat <<YAML | "$G" submit -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: burn-$i, namespace: bench, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  backoffLimit: 0
  template:
    spec:
      containers:
      - name: burn
        image: local
        command: ["$W/burn"]
        resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
YAML
  done
  local done_n=0
  for _ in $(seq 1 1200); do
    done_n=$("$G" ls -n bench -o json | grep -oE '"phase": ?"(Succeeded|Failed)"' | wc -l)
    ((done_n >= 4)) && break
    sleep 0.1
  done
  local t1; t1=$(date +%s.%N)
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  local failed; failed=$("$G" ls -n bench -o json | grep -oE '"phase": ?"Failed"' | wc -l)
  ((failed)) && STATUS=1
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  local util; util=$(awk '{s+=$1; n++} END {if (n) printf "%.0f", s/n; else print "?"}' "$W/util-$name")
  printf "gpu-check: %-13s 4 jobs in %6.2f s  throughput %6.1f jobs/min  mean GPU util %s%%  failed %s\n" \
    "$name" "$secs" "$(awk -v s="$secs" 'BEGIN {printf "%.1f", 240 / s}')" "$util" "$failed"
  for i in 1 2 3 4; do "$G" logs "bench/burn-$i" 2>/dev/null | sed "s/^/    burn-$i: /"; done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null
  grep -E "MPS daemon" "$W/$name.log" | sed 's/^/  /'
}

run_mode exclusive 1
run_mode time-slicing 4 "$W/dp-timeSlicing.yaml"
run_mode mps 4 "$W/dp-mps.yaml"
AFTER=$(settings)
if [[ "$AFTER" == "$BEFORE" ]]; then say "GPU settings unchanged: $AFTER"; else say "FAIL: settings changed: $AFTER"; exit 1; fi
exit "$STATUS"
