#!/usr/bin/env bash
# The CUDA shim's GPU check: for a machine with a real NVIDIA GPU (CI has none and skips
# it; tests/integration/gpu_check_dry.sh runs it against stand-ins). Builds gpuaas and
# libgpuaas-cuda.so, builds one small CUDA program (nvcc) and runs it as workloads through
# the daemon, sandboxed, with the library injected (docs/gpu-sharing.md "Limits inside
# the pod"), and prints:
#   memory   GPU 0 time-sliced x2 (limit: half its memory each). A allocates 256 MiB at a
#            time until refused and holds it; B then allocates 4 GiB, fills it, and
#            checks its checksum. Printed: A's cap against the limit, what cudaMemGetInfo
#            told A, B's verdict, and the view's used / limit / refused.
#   compute  GPU 0 as a fractional vGPU of 30 % and then 70 % cores: a kernel loop of
#            about 10 s each; printed: the target and the share the shim measured (the
#            view's computeShare.achieved, from the region). The daemon runs with no
#            nvidia-cuda-mps-control on its PATH, so MPS does not limit the vGPU too: the
#            figure is the shim's alone.
#   overhead a launch-bound loop (200000 empty kernels), on the host without the shim and
#            as a workload with it: ns per launch each, and the ratio.
# GPU settings: none is changed (no MPS, no MIG, no compute mode: the inventory is a
# simulated node carrying GPU 0's real UUID and memory, so the daemon drives no NVML
# setting); MIG mode and compute mode of every GPU are read before and after and must be
# equal. A GPU 0 in MIG mode is a skip.
# Budget: 5 minutes in all; every wait is bounded by what is left of it.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUDGET_END=$((SECONDS + 290))
say() { echo "cuda-shim-check: $*"; }
left() { echo $((BUDGET_END - SECONDS)); }
command -v nvidia-smi >/dev/null 2>&1 || { say "skip: no nvidia-smi on PATH (no NVIDIA GPU or driver here)"; exit 0; }
nvidia-smi -L >/dev/null 2>&1 || { say "skip: nvidia-smi finds no GPU"; exit 0; }
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
[[ -n "$NVCC" ]] || { say "FAIL: nvcc not found (install the CUDA toolkit)"; exit 1; }
command -v python3 >/dev/null || { say "FAIL: python3 is needed to read the workload views"; exit 1; }
settings() { nvidia-smi --query-gpu=index,mig.mode.current,compute_mode --format=csv,noheader; }
BEFORE=$(settings)
say "GPU settings before: $(tr '\n' ';' <<<"$BEFORE")"
if grep -q "Enabled" <<<"$(nvidia-smi -i 0 --query-gpu=mig.mode.current --format=csv,noheader)"; then
  say "skip: GPU 0 is in MIG mode; this check needs a full GPU and does not change MIG"; exit 0
fi
IFS=', ' read -r UUID MEM_MIB <<<"$(nvidia-smi -i 0 --query-gpu=uuid,memory.total --format=csv,noheader,nounits)"
say "GPU 0: $UUID, $MEM_MIB MiB"

W=$(mktemp -d /tmp/gxc.XXXXXX)
PIDS=()
STATUS=0
cleanup() {
  for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null; done
  for p in ${PIDS[@]+"${PIDS[@]}"}; do wait "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -n "${GPUAAS_BIN:-}" ]]; then
  G=$GPUAAS_BIN   # already built (e.g. by the caller), libgpuaas-cuda.so beside it
else
  say "building gpuaas and libgpuaas-cuda.so"
  make -s -j"$(nproc)" build/gpuaas build/gpuaas-shim build/libgpuaas-cuda.so >/dev/null || { say "FAIL: build"; exit 1; }
  G=$ROOT/build/gpuaas
fi
LIB=$(dirname "$G")/libgpuaas-cuda.so
[[ -f "$LIB" ]] || { say "FAIL: no $LIB: the shim cannot be injected"; exit 1; }

cat > "$W/shimcheck.cu" <<'CU'
// One program, four parts of the check: hog STOPFILE | work BYTES | loop SECONDS | launch N
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>
__global__ void fill(unsigned *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)(i * 2654435761u);
}
__global__ void sum(const unsigned *p, size_t n, unsigned long long *out) {
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += p[i];
    atomicAdd(out, s);
}
__global__ void spin(long iters, float *o) {
    float a = threadIdx.x * 1e-3f;
    for (long i = 0; i < iters; i++) a = fmaf(a, 1.0001f, 0.9999f);
    o[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
__global__ void empty() {}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    if (!strcmp(argv[1], "hog")) {
        std::vector<void *> held;
        size_t got = 0, chunk = (size_t)256 << 20;
        cudaError_t e;
        void *p;
        while ((e = cudaMalloc(&p, chunk)) == cudaSuccess && got < ((size_t)4 << 40)) { held.push_back(p); got += chunk; }
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        printf("hog: allocated %zu bytes, then %s; cudaMemGetInfo free %zu total %zu\n", got, cudaGetErrorName(e), fr, tot);
        fflush(stdout);
        while (access(argv[2], F_OK)) usleep(100000);
        for (void *q : held) cudaFree(q);
        return 0;
    }
    if (!strcmp(argv[1], "work")) {
        size_t bytes = strtoull(argv[2], NULL, 10), n = bytes / 4;
        unsigned *d; unsigned long long *s, got = 0, want = 0;
        if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMalloc(&s, 8) != cudaSuccess) { puts("work: cudaMalloc refused"); return 1; }
        cudaMemset(s, 0, 8);
        fill<<<1024, 256>>>(d, n);
        sum<<<1024, 256>>>(d, n, s);
        if (cudaMemcpy(&got, s, 8, cudaMemcpyDeviceToHost) != cudaSuccess) { puts("work: kernels failed"); return 1; }
        for (size_t i = 0; i < n; i++) want += (unsigned)(i * 2654435761u);
        printf("work: %zu bytes, checksum %s\n", bytes, got == want ? "ok" : "BAD");
        return got == want ? 0 : 1;
    }
    if (!strcmp(argv[1], "loop")) {
        float *o; cudaMalloc(&o, 132 * 256 * sizeof(float));
        double t0 = now(), secs = atof(argv[2]);
        long k = 0;
        while (now() - t0 < secs) { spin<<<132, 256>>>(200000, o); if (++k % 16 == 0) cudaDeviceSynchronize(); }
        cudaDeviceSynchronize();
        printf("loop: %ld kernels in %.1f s\n", k, now() - t0);
        return 0;
    }
    long n = atol(argv[2]);
    for (int i = 0; i < 1000; i++) empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    double t0 = now();
    for (long i = 0; i < n; i++) empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    printf("launch: %ld launches, %.0f ns/launch\n", n, (now() - t0) * 1e9 / n);
    return 0;
}
CU
# pods run sandboxed: the program lives in a folder namespace bench may mount
mkdir -p "$W/bin" && chmod 755 "$W" "$W/bin"
"$NVCC" -O2 -arch=native -o "$W/bin/shimcheck" "$W/shimcheck.cu" 2>/dev/null || "$NVCC" -O2 -o "$W/bin/shimcheck" "$W/shimcheck.cu" ||
  { say "FAIL: nvcc"; exit 1; }

# view KEY PYTHON-EXPR: a figure of workload bench/KEY's first pod's first GPU (v: its gpuMemory[0])
view() {
  curl -s -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/api/v1/workloads/bench/$1" |
    python3 -c "import json,sys; p=json.load(sys.stdin)['pods'][0]; v=(p.get('gpuMemory') or [{}])[0]; print($2)" 2>/dev/null
}
phase() { curl -s -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/api/v1/workloads/bench/$1" |
          python3 -c "import json,sys; print(json.load(sys.stdin).get('phase',''))" 2>/dev/null; }
wait_for() {   # wait_for SECONDS CMD...: bounded by the budget too
  local until=$((SECONDS + $1)); shift
  ((until > BUDGET_END - 10)) && until=$((BUDGET_END - 10))
  while ((SECONDS < until)); do "$@" && return 0; sleep 0.2; done
  return 1
}
ended() { local p; p=$(phase "$1"); [[ $p == Succeeded || $p == Failed ]]; }
log_has() { "$G" logs "bench/$1" 2>/dev/null | grep -q "$2"; }

start() {   # start NAME SHARING-LINE [PATH]: a daemon on a simulated node that is GPU 0
  local name=$1 sharing=$2 data=$W/data-$1
  cat > "$W/node-$name.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata: {name: gpu-box, labels: {kubernetes.io/hostname: gpu-box${sharing:-, nvidia.com/device-plugin.config: ts-2}}}
spec:
  cpu: "16"
  memory: 64Gi
  gpus: [{model: GPU, memory: ${MEM_MIB}Mi, uuid: $UUID$sharing}]
YAML
  cat > "$W/ts-2.yaml" <<'YAML'
version: v1
sharing:
  timeSlicing:
    resources:
    - {name: nvidia.com/gpu, replicas: 2, devices: [0]}
YAML
  cat > "$W/queues.yaml" <<'YAML'
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
  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "8"}
      - {name: nvidia.com/gpumem, nominalQuota: "10000000"}
      - {name: nvidia.com/gpucores, nominalQuota: "800"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: bench}
spec: {clusterQueue: cq}
YAML
  local dp=""
  [[ -z "$sharing" ]] && dp=", devicePlugin: {configs: {ts-2: $W/ts-2.yaml}}"
  {
    echo "apiVersion: gpuaas.dev/v1alpha1"; echo "kind: ServerConfig"; echo "listen: 127.0.0.1:0"
    echo "dataDir: $data"
    echo "inventory: {source: simulated, nodes: $W/node-$name.yaml$dp}"
    echo "manifests: [$W/queues.yaml]"
    echo "run: {cudaShim: \"on\", namespaces: {bench: {hostPaths: [{path: $W/bin, readOnly: true}]}}}"
  } > "$W/$name.yaml"
  PATH=${3:-$PATH} "$G" serve --config "$W/$name.yaml" > "$W/$name.log" 2>&1 &
  DPID=$!
  PIDS+=("$DPID")
  for _ in $(seq 1 100); do [[ -s "$data/serve.json" ]] && break; sleep 0.1; done
  if [[ ! -s "$data/serve.json" ]]; then say "FAIL: $name: the daemon did not start:"; tail -5 "$W/$name.log"; STATUS=1; return 1; fi
  export GPUAAS_SERVER GPUAAS_TOKEN
  GPUAAS_SERVER=$(sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' "$data/serve.json")
  GPUAAS_TOKEN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$W/$name.log" | tail -1)
}
stop() { kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }

submit() {   # submit NAME REQUESTS ARGS...
  local name=$1 req=$2; shift 2
  local args; args=$(printf '"%s", ' "$@")
  cat <<YAML | "$G" submit -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: $name, namespace: bench, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  backoffLimit: 0
  template:
    spec:
      terminationGracePeriodSeconds: 1
      volumes: [{name: bin, hostPath: {path: $W/bin}}]
      containers:
      - name: main
        image: local
        command: ["$W/bin/shimcheck", ${args%, }]
        volumeMounts: [{name: bin, mountPath: $W/bin, readOnly: true}]
        resources: {requests: $req}
YAML
}

# --- memory: A takes what it can, B is unharmed
if start memory ""; then
  submit hog '{cpu: "1", nvidia.com/gpu: "1"}' hog "$W/bin/stop-hog"
  if wait_for 60 log_has hog "hog: allocated"; then
    "$G" logs bench/hog | sed 's/^/  /'
    cap=$("$G" logs bench/hog | sed -n 's/.*allocated \([0-9]*\) bytes.*/\1/p')
    lim=$(view hog "v.get('limitBytes', 0)")
    printf "cuda-shim-check: memory   A's cap %.2f GiB of a %.2f GiB limit (%.1f %%); the GPU has %s MiB\n" \
      "$(awk -v b="$cap" 'BEGIN {print b / 2^30}')" "$(awk -v b="$lim" 'BEGIN {print b / 2^30}')" \
      "$(awk -v a="$cap" -v b="$lim" 'BEGIN {print b ? 100 * a / b : 0}')" "$MEM_MIB"
    say "memory   view of A: used $(view hog "v.get('usedBytes')") limit $lim refused $(view hog "v.get('refused')")"
    (( cap > lim )) && { say "FAIL: A holds more than its limit"; STATUS=1; }
    submit work '{cpu: "1", nvidia.com/gpu: "1"}' work $((4 << 30))
    wait_for 60 ended work || { say "FAIL: B did not finish"; STATUS=1; }
    b=$("$G" logs bench/work 2>/dev/null)
    say "memory   B: $b ($(phase work))"
    [[ "$b" == *"checksum ok"* && $(phase work) == Succeeded ]] || { say "FAIL: B was harmed"; STATUS=1; }
  else
    say "FAIL: A never reported"; "$G" logs bench/hog 2>&1 | tail -5; STATUS=1
  fi
  touch "$W/bin/stop-hog"
  wait_for 20 ended hog
  # --- overhead: the launch-bound loop with the shim (a workload here), and without (the host)
  submit launch '{cpu: "1", nvidia.com/gpu: "1"}' launch 200000
  wait_for 60 ended launch || { say "FAIL: the launch loop did not finish"; STATUS=1; }
  with=$("$G" logs bench/launch 2>/dev/null | sed -n 's/.* \([0-9.]*\) ns\/launch.*/\1/p')
  stop
  without=$(CUDA_VISIBLE_DEVICES=$UUID "$W/bin/shimcheck" launch 200000 | sed -n 's/.* \([0-9.]*\) ns\/launch.*/\1/p')
  if [[ -n "$with" && -n "$without" ]]; then
    printf "cuda-shim-check: overhead %s ns/launch without the shim, %s ns/launch with it: ratio %.2f\n" "$without" "$with" \
      "$(awk -v a="$with" -v b="$without" 'BEGIN {print b ? a / b : 0}')"
  else
    say "FAIL: no launch figures (with '$with', without '$without')"; STATUS=1
  fi
fi

# --- compute: a vGPU of 30 % and of 70 % of the SMs, the shim alone: the daemon's PATH is
# a folder of links to what PATH has but nvidia-cuda-mps-control (no MPS daemon starts);
# under /var/tmp, which pods see (their /tmp is their own), as their PATH is the daemon's
NOMPS=$(mktemp -d /var/tmp/gxc-path.XXXXXX) && chmod 755 "$NOMPS"
trap 'cleanup; rm -rf "$NOMPS"' EXIT
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [[ -d "$d" && "$d" == /* ]] || continue
  find "$d" -maxdepth 1 ! -name nvidia-cuda-mps-control \( -type f -o -type l \) -exec ln -s -t "$NOMPS" {} + 2>/dev/null
done
if (($(left) < 60)); then say "FAIL: compute: not run, the 5-minute budget is spent"; STATUS=1
elif start compute ", sharing: fractional" "$NOMPS"; then
  for share in 30 70; do
    submit "loop-$share" "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"4096\", nvidia.com/gpucores: \"$share\"}" loop 10
    wait_for 40 ended "loop-$share" || { say "FAIL: the $share % loop did not finish"; STATUS=1; }
    [[ $(phase "loop-$share") == Succeeded ]] || { say "FAIL: the $share % loop: $(phase "loop-$share"): $(curl -s -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/api/v1/workloads/bench/loop-$share" | python3 -c "import json,sys; print(json.load(sys.stdin).get('message'))")"; STATUS=1; }
    say "compute  target $(view "loop-$share" "v.get('computeShare', {}).get('target')") %, achieved $(view "loop-$share" "v.get('computeShare', {}).get('achieved')") % ($("$G" logs "bench/loop-$share" 2>/dev/null))"
  done
  stop
fi

AFTER=$(settings)
if [[ "$AFTER" == "$BEFORE" ]]; then
  say "GPU settings unchanged: $(tr '\n' ';' <<<"$AFTER")"
else
  say "FAIL: settings changed: $(tr '\n' ';' <<<"$AFTER")"; STATUS=1
fi
say "done in ${SECONDS}s"
exit "$STATUS"
