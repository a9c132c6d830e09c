#!/usr/bin/env bash
# GPU sharing end to end, on a machine without a GPU: simulated nodes of every mode
# (examples/sharing), the device-plugin files (single configs and the GPU Operator's
# ConfigMap) and mig-parted files read unchanged, MPS control daemons, pod environments,
# placement with reasons, `gpuaas gpus`, /metrics, the utilisation history and `gpuaas gpus mig apply`. Fakes stand in for what needs a GPU:
# tests/fakes/nvml/nvidia-cuda-mps-control (a script recording the MPS commands) is put
# first on PATH; gpu_nvml.sh covers the fake libnvidia-ml.so.1.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
EX=$ROOT/examples/sharing
export PATH="$ROOT/tests/fakes/nvml:$PATH"

sharing_config() {   # sharing_config NAME [DEVICE-PLUGIN FILE for mps-4] [devicePlugin VALUE]
  local dp=${2:-$EX/mps.yaml}
  local dpv=${3:-"{configs: {time-slicing-4: $EX/time-slicing.yaml, mps-4: $dp}}"}
  cat > "$TMP/$1.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory:
  source: simulated
  nodes: $EX/nodes.yaml
  devicePlugin: $dpv
  migConfig: $EX/mig-parted.yaml
manifests: [$EX/queues.yaml]
$(run_section)
YAML
  echo "$TMP/$1.yaml"
}

# sjob NAME REQUESTS-YAML SELECTOR-NODE SCRIPT
sjob() {
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: main}
spec:
  backoffLimit: 0
  template:
    spec:
      terminationGracePeriodSeconds: 1
      nodeSelector: {kubernetes.io/hostname: $3}
      containers:
      - name: main
        image: cuda
        command: ["sh", "-c", $(jq -Rn --arg s "$4" '$s')]
        resources:
          requests: $2
YAML
}

# --- a bad device-plugin file stops the start with the file, field and reason
cat > "$TMP/bad-dp.yaml" <<'YAML'
version: v1
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 0
YAML
out=$("$G" serve --config "$(sharing_config bad "$TMP/bad-dp.yaml")" 2>&1); rc=$?
expect_eq "bad device-plugin config refuses to start" "$rc" 2
expect_match "and says where and why" "$out" "bad-dp.yaml:6: sharing.mps.resources\[0\].replicas: replicas must be >= 2 \(got 0\)"

# --- the GPU Operator's ConfigMap is read as is: a bad entry names the file, the entry and its line
cat > "$TMP/bad-cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config-all, namespace: gpu-operator}
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 1
YAML
out=$("$G" serve --config "$(sharing_config bad-cm-server "" "{file: $TMP/bad-cm.yaml, default: any}")" 2>&1); rc=$?
expect_eq "a bad ConfigMap entry refuses to start" "$rc" 2
expect_match "naming the entry and its line" "$out" \
  "bad-cm.yaml:5: data.any: sharing.timeSlicing.resources\[0\].replicas \(line 6 of the entry\): replicas must be >= 2 \(got 1\)"

# --- every mode on simulated nodes, the device-plugin configs from the GPU Operator's ConfigMap
start_daemon "$(sharing_config good "" "$EX/device-plugin-configmap.yaml")" || { fail "daemon start"; finish; exit 1; }
expect_match "an MPS control daemon per MPS GPU" "$(cat "$TMP/serve.log")" "mps: GPU 0 \(GPU-[0-9a-f-]+\): control daemon running"
gj=$("$G" gpus -o json)
expect_eq "seven GPUs" "$(jq '.items | length' <<<"$gj")" 7
expect_eq "modes per node" "$(jq -r '[.items[] | .node + "=" + .mode] | join(" ")' <<<"$gj")" \
  "exclusive-node=exclusive exclusive-node=exclusive time-sliced-node=timeSlicing mps-node=mps mig-node=mig fractional-node=fractional fractional-node=fractional"
expect_eq "all-balanced on an A100-80GB" "$(jq -r '[.items[] | select(.mode=="mig") | .migDevices[].profile] | sort | join(",")' <<<"$gj")" \
  "1g.10gb,1g.10gb,2g.20gb,3g.40gb"
expect_match "MIG devices have MIG UUIDs" "$(jq -r '.items[] | select(.mode=="mig") | .migDevices[0].uuid' <<<"$gj")" "^MIG-"
expect_eq "time-slicing replicas" "$(jq -r '.items[] | select(.mode=="timeSlicing") | .replicas' <<<"$gj")" 4
tbl=$("$G" gpus)
expect_match "gpus table shows mode and slices" "$tbl" "mig-node +0 +A100-80GB +80Gi +mig +2g.20gb, 1g.10gb, 1g.10gb, 3g.40gb"
expect_match "gpus table shows replicas" "$tbl" "mps-node .* mps +0/4 replicas"

# --- MPS: four clients with 25 % and 10 GiB each; the fifth waits with a reason (the
# clients run until cancelled at the end: a short sleep could end before the checks)
for i in 1 2 3 4 5; do
  sjob "mps-$i" '{cpu: "1", nvidia.com/gpu: "1"}' mps-node "env; sleep 120" > "$TMP/mps-$i.yaml"
  "$G" submit -f "$TMP/mps-$i.yaml" >/dev/null
done
check "MPS client 1 runs" wait_phase team-a/mps-1 Running 10
check "MPS client 4 runs" wait_phase team-a/mps-4 Running 10
check "the scheduler has looked at the fifth" until_ok 10 wl_says team-a/mps-5 "no GPU fits"
expect_eq "the fifth MPS client waits" "$(wl_field team-a/mps-5 .phase)" Pending
expect_match "because no replica is free" "$(wl_field team-a/mps-5 .message)" "quota fits but no GPU fits: .*nvidia.com/gpu"
for _ in $(seq 1 30); do [[ -s "$TMP/data/logs/team-a/mps-1/pod-0.log" ]] && break; sleep 0.1; done
env1=$(cat "$TMP/data/logs/team-a/mps-1/pod-0.log" 2>/dev/null)
expect_match "MPS pipe directory in the pod" "$env1" "CUDA_MPS_PIPE_DIRECTORY=$TMP/data/mps/GPU-[0-9a-f-]+/pipe"
expect_match "MPS thread percentage 100/4" "$env1" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"
expect_match "MPS pinned memory 1/4 of 40 GiB" "$env1" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M"
expect_match "CUDA_VISIBLE_DEVICES is the GPU" "$env1" "CUDA_VISIBLE_DEVICES=GPU-"
expect_match "four replicas in use" "$("$G" gpus)" "mps-node .* mps +4/4 replicas"
# kill -9 and restart: the MPS daemons are adopted, the replicas restored to their holders
dev1=$(wl_field team-a/mps-1 '.placement[0].devices[0].replica')
crash_daemon
start_daemon "$TMP/good.yaml" || { fail "daemon restart"; finish; exit 1; }
expect_match "MPS daemons are adopted after a restart" "$(cat "$TMP/serve.log")" "control daemon adopted"
expect_eq "a running client keeps its replica" "$(wl_field team-a/mps-1 '.placement[0].devices[0].replica')" "$dev1"
expect_match "still four replicas in use" "$("$G" gpus)" "mps-node .* mps +4/4 replicas"
expect_eq "the fifth still waits" "$(wl_field team-a/mps-5 .phase)" Pending

# --- MIG: the pod gets its MIG device's UUID
sjob mig-1 '{cpu: "1", nvidia.com/mig-3g.40gb: "1"}' mig-node "env; sleep 120" > "$TMP/mig-1.yaml"
"$G" submit -f "$TMP/mig-1.yaml" >/dev/null
check "MIG job runs" wait_phase team-a/mig-1 Running 10
for _ in $(seq 1 30); do [[ -s "$TMP/data/logs/team-a/mig-1/pod-0.log" ]] && break; sleep 0.1; done
mig3=$(jq -r '.items[] | select(.mode=="mig") | .migDevices[] | select(.profile=="3g.40gb") | .uuid' <<<"$gj")
expect_match "CUDA_VISIBLE_DEVICES is the 3g.40gb MIG UUID" "$(cat "$TMP/data/logs/team-a/mig-1/pod-0.log" 2>/dev/null)" "CUDA_VISIBLE_DEVICES=$mig3"
r=$(api POST /api/v1/gpus/mig -d '{"config":"all-1g.10gb","node":"mig-node"}')
expect_eq "MIG re-layout of a busy GPU is refused" "$(status_of "$r")" 409
expect_match "naming who uses it" "$(body_of "$r")" "team-a/mig-1"

# --- fractional: HAMi names, bin-packed, limits in the environment
sjob frac-1 '{cpu: "1", nvidia.com/gpu: "1", nvidia.com/gpumem: "20480", nvidia.com/gpucores: "30"}' fractional-node \
  "env; sleep 120" > "$TMP/frac-1.yaml"
sjob frac-2 '{cpu: "1", nvidia.com/gpu: "1", nvidia.com/gpumem: "90000", nvidia.com/gpucores: "10"}' fractional-node \
  "true" > "$TMP/frac-2.yaml"
"$G" submit -f "$TMP/frac-1.yaml" >/dev/null
"$G" submit -f "$TMP/frac-2.yaml" >/dev/null
check "vGPU job runs" wait_phase team-a/frac-1 Running 10
check "the scheduler has looked at the second" until_ok 10 wl_says team-a/frac-2 "90000 MiB"
expect_eq "a vGPU larger than any GPU waits" "$(wl_field team-a/frac-2 .phase)" Pending
expect_match "with the reason" "$(wl_field team-a/frac-2 .message)" "no fractional GPU has 90000 MiB"
for _ in $(seq 1 30); do [[ -s "$TMP/data/logs/team-a/frac-1/pod-0.log" ]] && break; sleep 0.1; done
fenv=$(cat "$TMP/data/logs/team-a/frac-1/pod-0.log" 2>/dev/null)
expect_match "HAMi memory limit" "$fenv" "CUDA_DEVICE_MEMORY_LIMIT_0=20480m"
expect_match "HAMi SM limit" "$fenv" "CUDA_DEVICE_SM_LIMIT=30"
expect_match "MPS enforces the vGPU's cores" "$fenv" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30"
expect_match "and its memory" "$fenv" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M"
expect_match "the GPU shows the allocation" "$("$G" gpus)" "fractional-node .* fractional +30% cores, 20480Mi allocated"

# --- metrics and history
m=$(curl -s "$GPUAAS_SERVER/metrics")
expect_match "DCGM utilisation with its labels" "$m" 'DCGM_FI_DEV_GPU_UTIL\{gpu="0",UUID="GPU-[0-9a-f-]+",pci_bus_id="[0-9A-F:.]+",device="nvidia0",modelName="L4",Hostname="time-sliced-node",DCGM_FI_DRIVER_VERSION=""\} 0'
expect_match "framebuffer used per MIG instance" "$m" 'DCGM_FI_DEV_FB_USED\{[^}]*GPU_I_PROFILE="3g.40gb",GPU_I_ID="3",Hostname="[^"]+",DCGM_FI_DRIVER_VERSION=""\} 40192'
expect_match "MIG engine activity" "$m" 'DCGM_FI_PROF_GR_ENGINE_ACTIVE\{[^}]*GPU_I_PROFILE="3g.40gb"[^}]*\} 1'
expect_match "allocation per namespace" "$m" 'gpuaas_namespace_gpu_allocated\{namespace="team-a"\}'
uuid=$(jq -r '.items[] | select(.node=="mps-node") | .uuid' <<<"$gj")
h=$(api GET "/api/v1/gpus/$uuid/utilization?window=15m")
expect_eq "utilisation history answers" "$(status_of "$h")" 200
expect_match "with samples" "$(body_of "$h" | jq '.samples | length')" "^[1-9]"
h=$(api GET "/api/v1/gpus/$uuid/utilization?window=24h")
expect_eq "a day answers from the minute summaries" "$(body_of "$h" | jq .intervalSeconds)" 60
expect_eq "bad window" "$(status_of "$(api GET "/api/v1/gpus/$uuid/utilization?window=soon")")" 400
expect_eq "unknown GPU" "$(status_of "$(api GET "/api/v1/gpus/GPU-nope/utilization")")" 404

# --- MIG apply: admin only, a layout that does not fit changes nothing, then a good one
"$G" users create bob --namespaces team-a > "$TMP/bob.out" 2>&1
bob=$(grep -o 'gpt_[A-Za-z0-9_]*' "$TMP/bob.out" | head -1)
expect_eq "MIG apply is for admins" "$(status_of "$(TOKEN=$bob api POST /api/v1/gpus/mig -d '{"config":"all-1g.10gb"}')")" 403
"$G" cancel team-a/mig-1 >/dev/null 2>&1
check "the MIG job is cancelled" wait_phase team-a/mig-1 Deactivated 10
cat > "$TMP/parted.yaml" <<'YAML'
version: v1
mig-configs:
  too-big:
  - devices: all
    mig-enabled: true
    mig-devices: {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}
YAML
out=$("$G" gpus mig apply too-big --node mig-node -f "$TMP/parted.yaml" 2>&1)
expect_match "a layout over capacity is refused with the reason" "$out" "needs 8 compute slices"
out=$("$G" gpus mig apply all-3g.40gb --node mig-node 2>&1)
expect_match "gpus mig apply" "$out" "MIG config all-3g.40gb applied"
expect_eq "two 3g.40gb now" "$("$G" gpus -o json | jq -r '[.items[] | select(.mode=="mig") | .migDevices[].profile] | join(",")')" "3g.40gb,3g.40gb"
sjob mig-2 '{cpu: "1", nvidia.com/mig-3g.40gb: "1"}' mig-node "true" > "$TMP/mig-2.yaml"
"$G" submit -f "$TMP/mig-2.yaml" >/dev/null
check "a job runs on the new layout" wait_phase team-a/mig-2 Succeeded 10

# --- stop: the MPS daemons of idle GPUs quit
settled() { for _ in $(seq 1 100); do [[ $(wl_field "$1" .phase) =~ ^(Succeeded|Failed|Deactivated)$ ]] && return 0; sleep 0.1; done; return 1; }
for k in mps-1 mps-2 mps-3 mps-4 mps-5 frac-1; do "$G" cancel "team-a/$k" >/dev/null 2>&1; done
for k in mps-1 mps-2 mps-3 mps-4 mps-5 frac-1; do settled "team-a/$k"; done
stop_daemon
expect_match "MPS daemons get quit at stop" "$(cat "$TMP"/data/mps/*/log/control.log)" "quit"
finish
