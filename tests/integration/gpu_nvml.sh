#!/usr/bin/env bash
# The NVML backend through the daemon, on a machine without a GPU: the Makefile's fake
# libnvidia-ml.so.1 (tests/fakes/nvml/fake_nvml.c) plays two GPUs, one of them in MIG
# mode, so the real dlopen path, the GPU list, DCGM metrics, MIG apply through NVML and
# the fall-back to the simulated node (library missing, too old, init failing) are tested.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
FAKE=$ROOT/build/fakes/nvml/libnvidia-ml.so.1
[[ -f "$FAKE" ]] || { fail "fake NVML missing: run make fakes"; finish; exit 1; }
export FAKE_NVML_GPUS=A100-40GB,H100-80GB FAKE_NVML_MIG="0=3g.20gb+2g.10gb+1g.5gb" FAKE_NVML_UTIL=42
export FAKE_NVML_PROCS="1:4242:2048" FAKE_NVML_GPM=37.5

cat > "$TMP/node.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata:
  name: box
  labels: {gpu.vendor: nvidia}
spec:
  cpu: "16"
  memory: 64Gi
  gpus: [{model: L4, memory: 22Gi, uuid: GPU-simulated-0}]
YAML
cat > "$TMP/ts.yaml" <<'YAML'
version: v1
sharing:
  timeSlicing:
    resources:
    - {name: nvidia.com/gpu, replicas: 2, devices: [1]}
YAML
cat > "$TMP/parted.yaml" <<'YAML'
version: v1
mig-configs:
  four:
  - device-filter: "0x20B010DE"
    devices: [0]
    mig-enabled: true
    mig-devices: {"1g.10gb": 4}
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
  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/mig-1g.10gb]
    flavors:
    - name: any
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: cq}
YAML

nvml_config() {   # nvml_config NAME SOURCE LIBRARY
  cat > "$TMP/$1.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data-$1
inventory:
  source: $2
  nvmlLibrary: $3
  nodes: $TMP/node.yaml
  devicePlugin: $TMP/ts.yaml
manifests: [$TMP/queues.yaml]
$(run_section)
YAML
  mkdir -p "$TMP/data"
  echo "$TMP/$1.yaml"
}

start_at() {   # start_at CONFIG DATA: start_daemon with another data folder
  local cfg=$1
  rm -rf "$TMP/data"; mkdir -p "$TMP/$2"; ln -sfn "$TMP/$2" "$TMP/data"
  ADMIN_TOKEN="" start_daemon "$cfg"
}

# --- the fake NVML: GPUs, identity, live figures
start_at "$(nvml_config real nvml "$FAKE")" data-real || { fail "daemon start"; finish; exit 1; }
expect_match "says NVML is used" "$(cat "$TMP/serve.log")" "NVML .*libnvidia-ml.so.1 \(driver 550.54.15-fake\): 2 GPUs"
gj=$("$G" gpus -o json)
expect_eq "two GPUs from NVML" "$(jq '.items | length' <<<"$gj")" 2
expect_eq "on the configured node" "$(jq -r '.items[0].node' <<<"$gj")" box
expect_eq "NVML's names" "$(jq -r '[.items[].product] | join(",")' <<<"$gj")" "NVIDIA A100-SXM4-40GB,NVIDIA H100 80GB HBM3"
expect_eq "NVML's UUIDs" "$(jq -r '.items[1].uuid' <<<"$gj")" "GPU-fa4e0000-0000-4000-8000-000000000001"
expect_eq "the existing MIG layout is read" "$(jq -r '[.items[0].migDevices[].profile] | join(",")' <<<"$gj")" "3g.20gb,2g.10gb,1g.5gb"
expect_match "MIG UUIDs" "$(jq -r '.items[0].migDevices[0].uuid' <<<"$gj")" "^MIG-fa4e"
expect_eq "time-slicing of devices: [1]" "$(jq -r '.items[1].mode + " " + (.items[1].replicas|tostring)' <<<"$gj")" "timeSlicing 2"
expect_eq "processes" "$(jq -r '.items[1].processes[0].pid' <<<"$gj")" 4242
expect_eq "memory used" "$(jq -r '.items[1].memoryUsedMiB' <<<"$gj")" 2048
expect_eq "utilisation" "$(jq -r '.items[1].utilization' <<<"$gj")" 42
expect_eq "no utilisation on the MIG GPU" "$(jq -r '.items[0].utilization' <<<"$gj")" null
m=$(curl -s "$GPUAAS_SERVER/metrics")
expect_match "DCGM utilisation from NVML" "$m" 'DCGM_FI_DEV_GPU_UTIL\{gpu="1",UUID="GPU-fa4e0000-0000-4000-8000-000000000001",pci_bus_id="00000000:18:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="box",DCGM_FI_DRIVER_VERSION="550.54.15-fake"\} 42'
expect_match "framebuffer from NVML" "$m" 'DCGM_FI_DEV_FB_USED\{gpu="1",[^}]*\} 2048'
expect_eq "MIG GPU has no DCGM_FI_DEV_GPU_UTIL" "$(grep -c 'DCGM_FI_DEV_GPU_UTIL{gpu="0"' <<<"$m")" 0
# GPM (the fake reports GRAPHICS_UTIL 37.5 %): measured per MIG instance and per GPU
gpm_seen() { curl -s "$GPUAAS_SERVER/metrics" | grep -q "$1"; }
wait_gpm() { for _ in $(seq 1 50); do gpm_seen "$1" && return 0; sleep 0.1; done; return 1; }
# GPU_I_ID is the GPU instance id NVML reports (the fake numbers instances from 1, as NVML does)
check "GR_ENGINE_ACTIVE measured by GPM for a MIG instance" \
  wait_gpm 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",[^}]*GPU_I_PROFILE="3g.20gb",GPU_I_ID="1",Hostname="box",DCGM_FI_DRIVER_VERSION="550.54.15-fake",source="gpm"} 0.375'
check "and for a whole GPU" wait_gpm 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",[^}]*source="gpm"} 0.375'
expect_eq "gpus -o json shows it" "$("$G" gpus -o json | jq -r '.items[0].migDevices[0].grEngineActive')" 37.5

# --- a job on a MIG device of the real layout, then MIG apply through NVML
out=$("$G" gpus mig apply four -f "$TMP/parted.yaml" 2>&1)
expect_match "MIG apply through NVML" "$out" "GPU 0: MIG, 4 devices"
expect_eq "NVML reports the new layout" "$("$G" gpus -o json | jq -r '[.items[0].migDevices[].profile] | join(",")')" \
  "1g.10gb,1g.10gb,1g.10gb,1g.10gb"
job mig4 lab q 0 'echo devices=$CUDA_VISIBLE_DEVICES' | sed 's|nvidia.com/gpu: "0"|nvidia.com/mig-1g.10gb: "1"|' > "$TMP/mig4.yaml"
"$G" submit -f "$TMP/mig4.yaml" >/dev/null
check "a job runs on a new MIG device" wait_phase lab/mig4 Succeeded 10
expect_match "with its MIG UUID" "$("$G" logs lab/mig4 2>&1)" "devices=MIG-fa4e"
stop_daemon

# --- NVML without GPM (older driver or GPU): the estimate, labelled as such
FAKE_NVML_GPM= start_at "$(nvml_config nogpm nvml "$FAKE")" data-nogpm || fail "start without GPM"
unset_gpm_metrics=$(curl -s "$GPUAAS_SERVER/metrics")
expect_match "no GPM: the MIG estimate says so" "$unset_gpm_metrics" \
  'DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="0",[^}]*GPU_I_PROFILE="3g.20gb",GPU_I_ID="1",Hostname="box",DCGM_FI_DRIVER_VERSION="550.54.15-fake",source="estimate"\} 0'
expect_eq "no GPM: no whole-GPU line" "$(grep -c 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1"' <<<"$unset_gpm_metrics")" 0
stop_daemon
: > "$TMP/serve.log"

# --- NVML that cannot be used: the simulated node, and a message saying why
start_at "$(nvml_config missing auto "$TMP/none/libnvidia-ml.so.1")" data-missing || fail "start without NVML"
expect_match "missing library: falls back and says so" "$(cat "$TMP/serve.log")" \
  "NVML not used \(cannot load $TMP/none/libnvidia-ml.so.1: .*\): using the simulated node of inventory.nodes"
expect_eq "the simulated GPU is used" "$("$G" gpus -o json | jq -r '.items[0].uuid')" GPU-simulated-0
stop_daemon
: > "$TMP/serve.log"
start_at "$(nvml_config old nvml "$ROOT/build/fakes/nvml-old/libnvidia-ml.so.1")" data-old || fail "start with old NVML"
expect_match "too old: names the symbol" "$(cat "$TMP/serve.log")" "has no nvmlInit_v2"
stop_daemon
: > "$TMP/serve.log"
FAKE_NVML_FAIL=init start_at "$(nvml_config init nvml "$FAKE")" data-init || fail "start with failing NVML"
expect_match "init failure: NVML's own words" "$(cat "$TMP/serve.log")" "nvmlInit_v2 failed: Driver Not Loaded \(9\)"
finish
