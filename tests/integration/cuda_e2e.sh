#!/usr/bin/env bash
# The CUDA shim end to end on a machine without a GPU: the real libgpuaas-cuda.so,
# injected by the daemon into two workloads on one time-sliced GPU (an L4 of 24 GiB, 2
# replicas: 12 GiB each), and the fake libcuda.so.1 (tests/fakes/cuda: the real driver
# cannot exist in CI) standing in for the GPU under it. Workload "hog" asks for the whole
# card and is refused with CUDA_ERROR_OUT_OF_MEMORY (rc=2) without being killed, then
# takes its own 12 GiB; workload "calm" still gets its 12 GiB beside it. The daemon
# reads what the library accounted: used, limit, refusals, in the view and /metrics.
# What a real GPU adds (the neighbour's kernels unharmed, the physical memory really
# left) is tests/gpu/cuda_shim_check.sh's, for a machine lent a GPU.
source "$(dirname "$0")/lib.sh"
BUILD_DIR=$(dirname "$GPUAAS_BIN")
LIB=$BUILD_DIR/libgpuaas-cuda.so
[[ -f $LIB ]] || LIB=$ROOT/build/libgpuaas-cuda.so
for f in "$LIB" "$ROOT/build/fakes/cuda/libcuda.so.1" "$ROOT/build/cuda/cuda_probe"; do
  [[ -f $f ]] || { fail "$f is built (make cuda)"; finish; exit 1; }
done
mkdir -p "$TMP/bin"
cp "$GPUAAS_BIN" "$BUILD_DIR/gpuaas-shim" "$LIB" "$TMP/bin/"
cp "$ROOT/build/fakes/cuda/libcuda.so.1" "$ROOT/build/cuda/cuda_probe" "$SHARED/"
chmod 755 "$SHARED" "$SHARED/cuda_probe"

cat > "$TMP/nodes.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata:
  name: ts-node
  labels: {kubernetes.io/hostname: ts-node, nvidia.com/device-plugin.config: ts-2}
spec:
  cpu: "16"
  memory: 64Gi
  gpus: [{model: L4, memory: 24Gi}]
YAML
cat > "$TMP/ts-2.yaml" <<'YAML'
version: v1
sharing:
  timeSlicing:
    resources:
    - {name: nvidia.com/gpu, replicas: 2}
YAML
RUN_EXTRA="namespaces: {team-a: {hostPaths: [$SHARED]}}"
cat > "$TMP/gpuaas.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory:
  source: simulated
  nodes: $TMP/nodes.yaml
  devicePlugin: {configs: {ts-2: $TMP/ts-2.yaml}}
manifests: [$ROOT/examples/sharing/queues.yaml]
$(run_section)
YAML

# cjob NAME SCRIPT: a Job on the time-sliced GPU whose pod sees the fake driver
cjob() {
  cat > "$TMP/$1.job.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  backoffLimit: 0
  template:
    spec:
      terminationGracePeriodSeconds: 1
      nodeSelector: {kubernetes.io/hostname: ts-node}
$(hostpath_volume)
      containers:
      - name: main
        image: cuda
        command: ["sh", "-c", $(jq -Rn --arg s "$2" '$s')]
        env:
        - {name: LD_LIBRARY_PATH, value: $SHARED}
        - {name: FAKE_CUDA_MEM_MIB, value: "24576"}
        volumeMounts: [{name: shared, mountPath: $SHARED}]
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "1"}
YAML
  "$GPUAAS_BIN" submit -f "$TMP/$1.job.yaml" >/dev/null
}
pod_log() { cat "$TMP/data/logs/team-a/$1/pod-0.log" 2>/dev/null; }
log_says() { [[ "$(pod_log "$1")" =~ $2 ]]; }
gm() { wl_field "team-a/$1" ".pods[0].gpuMemory[0].$2"; }
gm_is() { [[ "$(gm "$1" "$2")" == "$3" ]]; }
MIB=1048576

GPUAAS_BIN=$TMP/bin/gpuaas start_daemon "$TMP/gpuaas.yaml" || { fail "daemon start"; finish; exit 1; }
GPUAAS_BIN=$TMP/bin/gpuaas
P=$SHARED/cuda_probe
cjob hog "echo whole: \$($P hold 24576 0); echo info: \$($P meminfo); $P hold 12288 600"
cjob calm "$P hold 12288 600"
check "hog runs" wait_phase team-a/hog Running 15
check "calm runs" wait_phase team-a/calm Running 15
check "hog has tried" until_ok 15 log_says hog "held rc=0"
lh=$(pod_log hog)
expect_match "hog: the whole card is refused with CUDA_ERROR_OUT_OF_MEMORY, the process lives" "$lh" "whole: held rc=2"
expect_match "hog: cuMemGetInfo shows its 12 GiB, not the card's 24" "$lh" "info: cuda rc=0 total=12288 "
expect_match "hog: its own share is granted" "$lh" "held rc=0"
check "calm: its share is granted beside the hog" until_ok 15 log_says calm "held rc=0"
check "the view shows hog's use, as the library accounted it" until_ok 10 gm_is hog usedBytes "$((12288 * MIB))"
expect_eq "hog's limit" "$(gm hog limitBytes)" "$((12288 * MIB))"
expect_eq "hog's refusal counted" "$(gm hog refused)" 1
check "calm's use shows, its own region" until_ok 10 gm_is calm usedBytes "$((12288 * MIB))"
expect_eq "calm was refused nothing" "$(gm calm refused)" 0
m=$(api GET /metrics | sed '$d')
expect_match "/metrics: hog's refusal" "$m" "gpuaas_pod_gpu_oom_refusals_total\{namespace=\"team-a\",workload=\"hog\",pod=\"0\",gpu=\"[^\"]+\"\} 1"
for w in hog calm; do "$GPUAAS_BIN" cancel "team-a/$w" >/dev/null; done
for w in hog calm; do check "$w is cancelled" wait_phase "team-a/$w" Deactivated 15; done
check "a killed process's memory is left out" until_ok 10 gm_is hog usedBytes 0
stop_daemon
finish
