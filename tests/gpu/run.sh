#!/usr/bin/env bash
# The GPU check: for a machine with a real NVIDIA GPU (CI has none and skips it).
# Builds gpuaas, prints `gpuaas gpus` as NVML sees the machine, then runs the same small
# CUDA kernel (built here with nvcc) as 4 Jobs through the daemon under each of:
#   exclusive   one GPU of quota: the 4 Jobs run one after another
#   time-slicing x4 (device-plugin config, replicas 4): the 4 run at once, in turns
#   MPS x4      (device-plugin config, replicas 4): the 4 run at once as MPS clients
# and prints, per mode, the wall time, throughput (jobs/min) and mean utilisation of the
# busiest GPU (nvidia-smi, sampled every 0.5 s).
# GPU settings: MIG is never touched (a GPU 0 in MIG mode is a skip). In MPS mode the
# daemon sets GPU 0 to EXCLUSIVE_PROCESS (needs root; otherwise it warns and goes on) and
# restores the mode at stop; MIG mode and compute mode of every GPU are read before and
# after and must be equal, and the exit trap puts the compute mode back and quits any
# MPS daemon left by an interrupted run.
# Budget: 5 minutes in all (build ~1 min, each mode ~10-30 s); every wait is bounded by
# what is left of it, and a mode that would overrun is reported as such.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUDGET_END=$((SECONDS + 290))
say() { echo "gpu-check: $*"; }
left() { echo $((BUDGET_END - SECONDS)); }
command -v nvidia-smi >/dev/null 2>&1 || { say "skip: no nvidia-smi on PATH (no NVIDIA GPU or driver here)"; exit 0; }
nvidia-smi -L >/dev/null 2>&1 || { say "skip: nvidia-smi finds no GPU"; exit 0; }
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
[[ -n "$NVCC" ]] || { say "FAIL: nvcc not found (install the CUDA toolkit)"; exit 1; }
settings() { nvidia-smi --query-gpu=index,mig.mode.current,compute_mode --format=csv,noheader; }
BEFORE=$(settings)
MODE0=$(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader | tr -d ' ')
say "GPU settings before: $(tr '\n' ';' <<<"$BEFORE")"
if grep -q "Enabled" <<<"$(nvidia-smi -i 0 --query-gpu=mig.mode.current --format=csv,noheader)"; then
  say "skip: GPU 0 is in MIG mode; this check needs a full GPU and does not change MIG"; exit 0
fi

# short: MPS puts unix sockets in DATA/mps/<uuid>/pipe, and a socket path has 108 bytes
W=$(mktemp -d /tmp/gxg.XXXXXX)
PIDS=()
STATUS=0
cleanup() {
  for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null; done
  for p in ${PIDS[@]+"${PIDS[@]}"}; do wait "$p" 2>/dev/null; done
  # an interrupted MPS run: quit its control daemon, put GPU 0's compute mode back
  for pipe in "$W"/data-*/mps/*/pipe; do
    [[ -e "$pipe/control" ]] || continue
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control >/dev/null 2>&1
  done
  local now; now=$(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | tr -d ' ')
  if [[ -n "$MODE0" && -n "$now" && "$now" != "$MODE0" ]]; then
    sleep 1
    nvidia-smi -i 0 -c "${MODE0^^}" >/dev/null 2>&1 || say "WARNING: could not restore GPU 0 compute mode $MODE0 (now $now)"
  fi
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -n "${GPUAAS_BIN:-}" ]]; then
  G=$GPUAAS_BIN   # already built (e.g. by the caller)
else
  say "building gpuaas"
  make -s -j"$(nproc)" build/gpuaas >/dev/null || { say "FAIL: build"; exit 1; }
  G=$ROOT/build/gpuaas
fi

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
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    printf("kernel %.0f ms on %s\n", ms, vis ? vis : "(all)");
    return 0;
}
CU
# -arch=native (CUDA >= 11.5) builds SASS for this GPU; older nvcc: its default arch + PTX (JIT)
# pods run sandboxed (docs/security.md): the host's /tmp is not theirs, so the program lives
# in a folder namespace bench may mount (run.namespaces.bench.hostPaths), bound at its path
mkdir -p "$W/bin" && chmod 755 "$W" "$W/bin"
"$NVCC" -O2 -arch=native -o "$W/bin/burn" "$W/burn.cu" 2>/dev/null || "$NVCC" -O2 -o "$W/bin/burn" "$W/burn.cu" ||
  { say "FAIL: nvcc"; exit 1; }
"$W/bin/burn" 1000 >/dev/null || { say "FAIL: the CUDA program does not run outside gpuaas"; exit 1; }

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
  if (($(left) < 40)); then say "FAIL: $name: not run, the 5-minute budget is spent"; STATUS=1; return; fi
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
    echo "run: {namespaces: {bench: {hostPaths: [{path: $W/bin, readOnly: true}]}}}"
  } > "$W/$name.yaml"
  "$G" serve --config "$W/$name.yaml" > "$W/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 100); do [[ -s "$data/serve.json" ]] && break; sleep 0.1; done
  if [[ ! -s "$data/serve.json" ]]; then
    say "FAIL: $name: the daemon did not start:"; tail -5 "$W/$name.log"; STATUS=1; return
  fi
  export GPUAAS_SERVER GPUAAS_TOKEN
  GPUAAS_SERVER=$(sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' "$data/serve.json")
  GPUAAS_TOKEN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$W/$name.log" | tail -1)
  [[ $name == exclusive ]] && { say "gpuaas gpus (NVML):"; "$G" gpus -o wide; }
  grep -E "NVML|mps:" "$W/$name.log" | sed 's/^/  /'
  # every GPU: in exclusive mode the Jobs may land on any of them
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 500 > "$W/util-$name" 2>/dev/null &
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
      volumes: [{name: bin, hostPath: {path: $W/bin}}]
      containers:
      - name: burn
        image: local
        command: ["$W/bin/burn"]
        volumeMounts: [{name: bin, mountPath: $W/bin, readOnly: true}]
        resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
YAML
  done
  local done_n=0 cap=$(($(left) - 25)); ((cap > 90)) && cap=90   # one hung mode must not starve the next
  local until=$((SECONDS + cap))
  while ((SECONDS < until)); do
    done_n=$("$G" ls -n bench -o json | grep -oE '"phase": *"(Succeeded|Failed)"' | wc -l)
    ((done_n >= 4)) && break
    sleep 0.1
  done
  local t1; t1=$(date +%s.%N)
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  local failed; failed=$("$G" ls -n bench -o json | grep -oE '"phase": *"Failed"' | wc -l)
  ((failed)) && STATUS=1
  ((done_n < 4)) && { say "FAIL: $name: only $done_n of 4 jobs finished within the budget"; STATUS=1; }
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  local util; util=$(awk -F', *' '{s[$1]+=$2; n[$1]++} END {m=-1; for (g in s) if (s[g]/n[g] > m) m=s[g]/n[g];
                                  if (m < 0) print "?"; else printf "%.0f", m}' "$W/util-$name")
  printf "gpu-check: %-13s 4 jobs in %6.2f s  throughput %6.1f jobs/min  mean GPU util %s%%  failed %s\n" \
    "$name" "$secs" "$(awk -v s="$secs" 'BEGIN {printf "%.1f", 240 / s}')" "$util" "$failed"
  for i in 1 2 3 4; do "$G" logs "bench/burn-$i" 2>/dev/null | sed "s/^/    burn-$i: /"; done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null
  grep -E "MPS daemon|compute mode|WARNING" "$W/$name.log" | sed 's/^/  /'
}

run_mode exclusive 1
run_mode time-slicing 4 "$W/dp-timeSlicing.yaml"
run_mode mps 4 "$W/dp-mps.yaml"
AFTER=$(settings)
if [[ "$AFTER" == "$BEFORE" ]]; then
  say "GPU settings unchanged: $(tr '\n' ';' <<<"$AFTER")"
else
  say "FAIL: settings changed: $(tr '\n' ';' <<<"$AFTER")"; STATUS=1
fi
say "done in ${SECONDS}s"
exit "$STATUS"
