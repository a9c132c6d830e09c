#!/usr/bin/env bash
# The CUDA shim's injection by the daemon (docs/gpu-sharing.md "Limits inside the pod"),
# on a machine without a GPU: simulated nodes with a time-sliced GPU (2 replicas), a
# fractional GPU and an exclusive one. A pod on a shared GPU finds /etc/ld.so.preload
# naming the library (read-only; `unset LD_PRELOAD` changes nothing), GPUAAS_CUDA_REGION
# set and its region writable; a pod on the exclusive GPU has none of it. A small C
# writer (cuda-writer, built here against gpu/cuda_region.h) stands in for
# libgpuaas-cuda.so inside the pods: it takes a slot as the library does (its own OFD lock)
# and counts an allocation; the workload view and /metrics show it, each workload's
# region is its own, and a writer that dies is left out. The library file is a stand-in
# too (an empty shared object beside a copy of the gpuaas binary: the real one is built
# by src/cudashim; once it is, this file may use it with the fake libcuda). Without the
# library, run.cudaShim auto starts the pod and says its limits are not enforced, on
# fails it with the reason. Without root, pods run unsandboxed: then only LD_PRELOAD is
# checked.
source "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/sharing
export PATH="$ROOT/tests/fakes/nvml:$PATH"
ROOTED=$([[ $(id -u) -eq 0 ]] && echo 1 || echo 0)

# the daemon beside a stand-in library; another copy without one
mkdir -p "$TMP/bin" "$TMP/nolib"
cp "$GPUAAS_BIN" "$(dirname "$GPUAAS_BIN")/gpuaas-shim" "$TMP/bin/"
cp "$GPUAAS_BIN" "$(dirname "$GPUAAS_BIN")/gpuaas-shim" "$TMP/nolib/"
echo 'int gpuaas_cuda_standin;' > "$TMP/standin.c"
cc -shared -fPIC -o "$TMP/bin/libgpuaas-cuda.so" "$TMP/standin.c" || { fail "stand-in library builds"; finish; exit 1; }
# cuda-writer BYTES SLOT STOPFILE: count BYTES on device 0 in slot SLOT, one refusal, then
# hold until STOPFILE exists and end without freeing anything (a crash, to the region)
cat > "$TMP/writer.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "gpu/cuda_region.h"
int main(int argc, char **argv)
{
    const char *p = getenv(GX_CUDA_REGION_ENV);
    if (argc < 4 || !p) { fprintf(stderr, "writer: no region\n"); return 2; }
    int fd = open(p, O_RDWR);
    int slot = atoi(argv[2]);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = GX_CUDA_REGION_LOCK_BASE + slot, .l_len = 1};
    if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl)) { perror("writer: open/lock"); return 3; }
    gx_cuda_region *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED || r->magic != GX_CUDA_REGION_MAGIC) { fprintf(stderr, "writer: not a region\n"); return 4; }
    uint64_t b = strtoull(argv[1], NULL, 10);
    __atomic_fetch_add(&r->used[0], b, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&r->slots[slot].used[0], b, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->slots[slot].in_use, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->peak[0], r->used[0], __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&r->refused[0], 1, __ATOMIC_SEQ_CST);
    printf("writer: limit=%llu counted=%llu\n", (unsigned long long)r->limit[0], (unsigned long long)b);
    fflush(stdout);
    while (access(argv[3], F_OK)) usleep(50000);
    return 0;
}
C
cc -O -I"$ROOT/src" -o "$SHARED/cuda-writer" "$TMP/writer.c" || { fail "writer builds"; finish; exit 1; }
chmod 755 "$SHARED/cuda-writer"

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
---
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata:
  name: frac-node
  labels: {kubernetes.io/hostname: frac-node}
spec:
  cpu: "16"
  memory: 64Gi
  gpus: [{model: H100-80GB, memory: 80Gi, sharing: fractional}]
---
apiVersion: gpuaas.dev/v1alpha1
kind: Node
metadata:
  name: ex-node
  labels: {kubernetes.io/hostname: ex-node}
spec:
  cpu: "16"
  memory: 64Gi
  gpus: [{model: H100-80GB, memory: 80Gi}]
YAML
cat > "$TMP/ts-2.yaml" <<'YAML'
version: v1
sharing:
  timeSlicing:
    resources:
    - {name: nvidia.com/gpu, replicas: 2}
YAML
config() {   # config NAME [cudaShim VALUE]
  local CUDA_SETTING=${2:+cudaShim: $2}
  RUN_EXTRA="namespaces: {team-a: {hostPaths: [$SHARED]}}${CUDA_SETTING:+, $CUDA_SETTING}"
  cat > "$TMP/$1.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory:
  source: simulated
  nodes: $TMP/nodes.yaml
  devicePlugin: {configs: {ts-2: $TMP/ts-2.yaml}}
manifests: [$EX/queues.yaml]
$(run_section)
YAML
  echo "$TMP/$1.yaml"
}

# sjob NAME NODE REQUESTS SCRIPT
sjob() {
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  backoffLimit: 0
  template:
    spec:
      terminationGracePeriodSeconds: 1
      nodeSelector: {kubernetes.io/hostname: $2}
$(hostpath_volume)
      containers:
      - name: main
        image: cuda
        command: ["sh", "-c", $(jq -Rn --arg s "$4" '$s')]
        volumeMounts: [{name: shared, mountPath: $SHARED}]
        resources:
          requests: $3
YAML
}
submit() { sjob "$@" > "$TMP/$1.job.yaml" && "$GPUAAS_BIN" submit -f "$TMP/$1.job.yaml" >/dev/null; }
pod_log() { cat "$TMP/data/logs/team-a/$1/pod-0.log" 2>/dev/null; }
log_says() { [[ "$(pod_log "$1")" =~ $2 ]]; }
gm() { wl_field "team-a/$1" ".pods[0].gpuMemory[0].$2"; }
gm_is() { [[ "$(gm "$1" "$2")" == "$3" ]]; }

GIB=1073741824
PROBE='cat /etc/ld.so.preload 2>/dev/null | sed "s/^/preload=/"; echo "region=${GPUAAS_CUDA_REGION:-none}"; echo "ldpreload=${LD_PRELOAD:-none}"
[ -n "$GPUAAS_CUDA_REGION" ] && [ -w "$GPUAAS_CUDA_REGION" ] && echo region-writable
[ -r /run/gpuaas/libgpuaas-cuda.so ] && echo lib-present
unset LD_PRELOAD; cat /etc/ld.so.preload 2>/dev/null | sed "s/^/after-unset=/"
(echo x > /etc/ld.so.preload) 2>/dev/null && echo preload-WRITABLE
rm -f /etc/ld.so.preload 2>/dev/null; [ -e /etc/ld.so.preload ] && echo preload-kept
echo probed'

G=$TMP/bin/gpuaas
GPUAAS_BIN=$G start_daemon "$(config main)" || { fail "daemon start"; finish; exit 1; }
GPUAAS_BIN=$G   # the daemon beside the stand-in (the CLI too)

# --- a pod on the time-sliced GPU, and a second workload on its other replica
submit ts-a ts-node '{cpu: "1", nvidia.com/gpu: "1"}' "$PROBE; $SHARED/cuda-writer $GIB 3 $SHARED/stop-a; sleep 120"
submit ts-b ts-node '{cpu: "1", nvidia.com/gpu: "1"}' "$SHARED/cuda-writer $((2 * GIB)) 0 $SHARED/stop-b; sleep 120"
check "time-sliced pod a runs" wait_phase team-a/ts-a Running 15
check "time-sliced pod b runs" wait_phase team-a/ts-b Running 15
check "pod a probed its sandbox" until_ok 10 log_says ts-a "writer: limit="
la=$(pod_log ts-a)
if ((ROOTED)); then
  expect_match "/etc/ld.so.preload names the library" "$la" "preload=/run/gpuaas/libgpuaas-cuda.so"
  expect_match "unset LD_PRELOAD changes nothing" "$la" "after-unset=/run/gpuaas/libgpuaas-cuda.so"
  expect_match "the library is bound in" "$la" "lib-present"
  expect_match "the region is at its fixed path" "$la" "region=/run/gpuaas/cuda-region"
  expect_match "the pod cannot remove the preload file" "$la" "preload-kept"
  check "nor write it" test -z "$(grep preload-WRITABLE <<<"$la")"
  expect_eq "the region file is the pod's uid's" "$(stat -c %u "$TMP/data/run/team-a/ts-a/g1-p0.cuda")" \
    "$(wl_field team-a/ts-a '.pods[0].runAsUser')"
  expect_eq "mode 0600" "$(stat -c %a "$TMP/data/run/team-a/ts-a/g1-p0.cuda")" 600
else
  expect_match "unsandboxed: LD_PRELOAD names the library" "$la" "ldpreload=$TMP/bin/libgpuaas-cuda.so"
  expect_match "and the region its host path" "$la" "region=$TMP/data/run/team-a/ts-a/g1-p0.cuda"
fi
expect_match "the region is writable by the pod" "$la" "region-writable"
expect_match "its limit is half the L4's 24 GiB (2 replicas)" "$la" "writer: limit=$((12 * GIB)) "

check "pod a's use shows in the view" until_ok 10 gm_is ts-a usedBytes "$GIB"
expect_eq "limit in the view" "$(gm ts-a limitBytes)" "$((12 * GIB))"
expect_eq "peak in the view" "$(gm ts-a peakBytes)" "$GIB"
expect_eq "refusals in the view" "$(gm ts-a refused)" 1
expect_eq "no compute share on time-slicing" "$(gm ts-a computeShare.target)" null
expect_eq "the device is the pod's GPU" "$(gm ts-a device)" "$(wl_field team-a/ts-a '.pods[0].devices')"
expect_eq "limits enforced" "$(wl_field team-a/ts-a '.pods[0].gpuLimitsEnforced')" true
check "pod b's use shows" until_ok 10 gm_is ts-b usedBytes "$((2 * GIB))"
expect_eq "a second workload's region is its own" "$(gm ts-a usedBytes)" "$GIB"
m=$(api GET /metrics | sed '$d')
uuid=$(gm ts-a device)
expect_match "/metrics: used bytes" "$m" "gpuaas_pod_gpu_memory_used_bytes\{namespace=\"team-a\",workload=\"ts-a\",pod=\"0\",gpu=\"$uuid\"\} $GIB"
expect_match "/metrics: limit" "$m" "gpuaas_pod_gpu_memory_limit_bytes\{namespace=\"team-a\",workload=\"ts-b\",pod=\"0\",gpu=\"$uuid\"\} $((12 * GIB))"
expect_match "/metrics: refusals" "$m" "gpuaas_pod_gpu_oom_refusals_total\{namespace=\"team-a\",workload=\"ts-a\",pod=\"0\",gpu=\"$uuid\"\} 1"
grep gpuaas_pod_gpu <<<"$m" > "$TMP/shim.prom"
check "promtool passes the shim's series" bash -c "promtool check metrics < '$TMP/shim.prom'"
sign_in "$TMP/admin.jar" "$ADMIN_TOKEN" >/dev/null
page=$(curl -s -b "$TMP/admin.jar" "$GPUAAS_SERVER/ui/workloads/team-a/ts-b")
expect_match "the portal shows the pod's GPU memory used / limit" "$page" "<h2>GPU memory</h2>.*2\.0 GiB / 12\.0 GiB"
# the writer of a ends without freeing its slot: its use is left out (the OFD-lock rule)
touch "$SHARED/stop-a"
check "a dead process's use is left out" until_ok 10 gm_is ts-a usedBytes 0
expect_eq "its peak stays" "$(gm ts-a peakBytes)" "$GIB"
expect_eq "b is untouched" "$(gm ts-b usedBytes)" "$((2 * GIB))"

# --- fractional: the vGPU's memory and cores; exclusive: nothing
submit fr frac-node '{cpu: "1", nvidia.com/gpu: "1", nvidia.com/gpumem: "20480", nvidia.com/gpucores: "30"}' \
  "$SHARED/cuda-writer 4096 1 $SHARED/stop-fr; sleep 120"
submit ex ex-node '{cpu: "1", nvidia.com/gpu: "1"}' "$PROBE"
check "fractional pod runs" wait_phase team-a/fr Running 15
check "its limit is the vGPU's 20480 MiB" until_ok 10 gm_is fr limitBytes "$((20480 * 1048576))"
expect_eq "its compute share target is its 30 cores" "$(gm fr computeShare.target)" 30
check "exclusive pod ends" wait_phase team-a/ex Succeeded 15
le=$(pod_log ex)
expect_match "exclusive: no preload file" "$le" "region=none"
check "exclusive: nothing in /etc/ld.so.preload" test -z "$(grep -E '^preload=|lib-present|region-writable' <<<"$le")"
expect_eq "exclusive: no gpuMemory" "$(wl_field team-a/ex '.pods[0].gpuMemory')" null
check "exclusive: no region file" test ! -e "$TMP/data/run/team-a/ex/g1-p0.cuda"
touch "$SHARED/stop-b" "$SHARED/stop-fr"
for w in ts-a ts-b fr; do "$GPUAAS_BIN" cancel "team-a/$w" >/dev/null; done
for w in ts-a ts-b fr; do check "$w is cancelled" wait_phase "team-a/$w" Deactivated 15; done
expect_eq "a workload is deleted" "$(status_of "$(api DELETE /api/v1/workloads/team-a/ts-a)")" 200
check "a region goes with its workload" until_ok 10 test ! -e "$TMP/data/run/team-a/ts-a/g1-p0.cuda"
stop_daemon

# --- no library beside the binary: auto starts the pod and says so, on refuses it
GPUAAS_BIN=$TMP/nolib/gpuaas start_daemon "$(config auto)" || { fail "daemon start (no library)"; finish; exit 1; }
submit na ts-node '{cpu: "1", nvidia.com/gpu: "1"}' "$PROBE; sleep 120"
check "auto: the pod starts without the library" wait_phase team-a/na Running 15
expect_eq "auto: the view says its limits are not enforced" "$(wl_field team-a/na '.pods[0].gpuLimitsEnforced')" false
expect_match "auto: and why" "$(wl_field team-a/na '.pods[0].gpuLimitsNote')" "libgpuaas-cuda.so is missing"
sign_in "$TMP/admin.jar" "$ADMIN_TOKEN" >/dev/null
expect_match "auto: the portal says so" "$(curl -s -b "$TMP/admin.jar" "$GPUAAS_SERVER/ui/workloads/team-a/na")" "Not enforced: libgpuaas-cuda.so is missing"
check "auto: the daemon logs it" log_has "$TMP/serve.log" "libgpuaas-cuda.so is missing: pods on time-sliced"
"$GPUAAS_BIN" cancel team-a/na >/dev/null
check "auto: cancelled" wait_phase team-a/na Deactivated 15
stop_daemon
GPUAAS_BIN=$TMP/nolib/gpuaas start_daemon "$(config on on)" || { fail "daemon start (cudaShim on)"; finish; exit 1; }
submit non ts-node '{cpu: "1", nvidia.com/gpu: "1"}' "true"
check "on: the pod does not start" wait_phase team-a/non Failed 15
expect_match "on: the reason names the setting and the file" "$(wl_field team-a/non .message)" "run.cudaShim is on, but .*libgpuaas-cuda.so is missing"
finish
