#!/usr/bin/env bash
# MPS on "real" GPUs, on a machine without one: the fake libnvidia-ml.so.1 plays an H100
# (MPS x2 by the device-plugin config) and an L4, and keeps each GPU's compute mode in
# $FAKE_NVML_STATE/compute-mode-I; the fake nvidia-cuda-mps-control stands in for MPS.
# Checked: EXCLUSIVE_PROCESS while the MPS daemon serves the GPU, the original mode
# recorded under the data dir, restored at stop and after a crash-restart; a warning
# and MPS still running when the mode cannot be set; and a shared replica that does not
# wait for another replica's process that is still stopping.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
FAKE=$ROOT/build/fakes/nvml/libnvidia-ml.so.1
[[ -f "$FAKE" ]] || { fail "fake NVML missing: run make fakes"; finish; exit 1; }
export PATH="$ROOT/tests/fakes/nvml:$PATH"
export FAKE_NVML_GPUS=H100-80GB,L4 FAKE_NVML_STATE=$TMP/nvml-state
mkdir -p "$FAKE_NVML_STATE"
H100=GPU-fa4e0000-0000-4000-8000-000000000000

cat > "$TMP/node.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata: {name: box}
spec: {cpu: "16", memory: 64Gi}
YAML
cat > "$TMP/mps.yaml" <<'YAML'
version: v1
sharing:
  mps:
    resources:
    - {name: nvidia.com/gpu, replicas: 2, devices: [0]}
YAML
cat > "$TMP/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: any
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: cq}
YAML
cat > "$TMP/cfg.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory: {source: nvml, nvmlLibrary: $FAKE, nodes: $TMP/node.yaml, devicePlugin: $TMP/mps.yaml}
manifests: [$TMP/queues.yaml]
$(RUN_EXTRA="namespaces: {lab: {hostPaths: [$SHARED]}}" run_section)
YAML
mkdir -p "$TMP/data"
mode_of() { cat "$FAKE_NVML_STATE/compute-mode-$1" 2>/dev/null || echo 0; }
REC=$TMP/data/mps/$H100/compute-mode

# --- EXCLUSIVE_PROCESS while MPS runs; the original recorded, then restored at stop
echo 2 > "$FAKE_NVML_STATE/compute-mode-0"     # Prohibited, so "restored" is not just the default
start_daemon "$TMP/cfg.yaml" || { fail "daemon start"; finish; exit 1; }
expect_match "the MPS daemon runs on GPU 0" "$(cat "$TMP/serve.log")" "mps: GPU 0 \($H100\): control daemon running"
expect_match "says it changes the compute mode" "$(cat "$TMP/serve.log")" "compute mode Prohibited -> Exclusive_Process"
expect_eq "GPU 0 is EXCLUSIVE_PROCESS" "$(mode_of 0)" 3
expect_eq "the L4 (exclusive, no MPS) is not touched" "$(mode_of 1)" 0
expect_eq "the original mode is recorded under the data dir" "$(cat "$REC" 2>/dev/null)" 2

# --- a replica does not wait for another replica's stopping process; the pod gets MPS
# the two pods meet in $SHARED, a host folder namespace lab may mount (the host, $TMP
# included, is read-only in their sandboxes)
GRACE=30 job a lab q 1 "trap 'for i in \$(seq 1 100); do [ -e $SHARED/b-started ] && { echo overlap > $SHARED/a-result; exit 0; }; sleep 0.1; done; echo waited > $SHARED/a-result; exit 0' TERM; touch $SHARED/a-started; while :; do sleep 0.1; done" \
  "" "$(hostpath_volume)" > "$TMP/a.yaml"
"$G" submit -f "$TMP/a.yaml" >/dev/null
check "job a runs on an MPS replica" wait_phase lab/a Running 10
for _ in $(seq 1 50); do [[ -e "$SHARED/a-started" ]] && break; sleep 0.1; done
"$G" cancel lab/a >/dev/null 2>&1 || api DELETE /api/v1/workloads/lab/a >/dev/null
job b lab q 1 "env > $SHARED/b.env; touch $SHARED/b-started; sleep 1" "" "$(hostpath_volume)" > "$TMP/b.yaml"
"$G" submit -f "$TMP/b.yaml" >/dev/null
check "job b succeeds" wait_phase lab/b Succeeded 20
for _ in $(seq 1 100); do [[ -s "$SHARED/a-result" ]] && break; sleep 0.1; done
expect_eq "b started while a was still stopping (its own replica was free)" "$(cat "$SHARED/a-result" 2>/dev/null)" overlap
expect_match "b is an MPS client (extra_env from gpu/podenv)" "$(cat "$SHARED/b.env" 2>/dev/null)" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"
expect_match "on GPU 0" "$(cat "$SHARED/b.env" 2>/dev/null)" "CUDA_VISIBLE_DEVICES=$H100"

# --- crash: the next start keeps the record of the original; a clean stop restores it
crash_daemon
expect_eq "after a crash GPU 0 is still EXCLUSIVE_PROCESS" "$(mode_of 0)" 3
start_daemon "$TMP/cfg.yaml" || { fail "daemon restart"; finish; exit 1; }
expect_eq "the record still says the original" "$(cat "$REC" 2>/dev/null)" 2
stop_daemon
expect_eq "stop restores the original compute mode" "$(mode_of 0)" 2
expect_match "and says so" "$(cat "$TMP/serve.log")" "compute mode restored to Prohibited"
expect_eq "the record is gone" "$([[ -e "$REC" ]] && echo present || echo gone)" gone

# --- not root: a clear warning, MPS still runs, nothing to restore
: > "$TMP/serve.log"
FAKE_NVML_FAIL=setcompute start_daemon "$TMP/cfg.yaml" || { fail "daemon start (no permission)"; finish; exit 1; }
expect_match "warns when the mode cannot be set" "$(cat "$TMP/serve.log")" \
  "WARNING: cannot set compute mode EXCLUSIVE_PROCESS \(.*Insufficient Permissions; needs root\)"
expect_match "MPS runs all the same" "$(cat "$TMP/serve.log")" "control daemon running"
expect_eq "the mode is as it was" "$(mode_of 0)" 2
stop_daemon
finish
