#!/usr/bin/env bash
# IdlePolicy on the real daemon: an idle workload is warned (condition IdleWarning on its
# view), then requeued (reason Idle) behind the job waiting for its GPU, which then runs;
# the GPU-hours reclaimed show in /metrics and survive a restart; a bad policy is refused
# naming the field; an exempt priority class is left alone.
# The signal: the GPUs here are simulated, whose utilisation is only their allocated
# share (never idle), so the daemon reads the annotation gpuaas.dev/utilization (percent
# from offsets after admission, as `gpuaas sim scenario` does) for a workload on
# simulated GPUs: that is this test's knob (docs/queueing.md, "Idle GPUs").
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
{ queues interactive 8 1
  cat <<'YAML'
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: critical}
value: 10
---
apiVersion: gpuaas.dev/v1alpha1
kind: IdlePolicy
metadata: {name: reclaim}
spec:
  clusterQueues: [interactive]
  threshold: 5
  idleFor: 2s
  grace: 3s
  action: requeue
  exemptPriorityClasses: [critical]
YAML
} > "$TMP/queues.yaml"
cfg=$(write_config idle "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# a policy with a bad field is refused, naming it
cat > "$TMP/bad.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: IdlePolicy
metadata: {name: bad}
spec: {clusterQueues: [interactive], threshold: 5, idleFor: soon}
YAML
r=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$TMP/bad.yaml")
expect_eq "a bad IdlePolicy is refused" "$(status_of "$r")" 422
expect_match "naming the field" "$(body_of "$r" | jq -r '.error.field // .error.message')" "spec.idleFor"

# the shipped interactive-session template brings its idle policy along
r=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$ROOT/examples/templates/interactive-session.yaml")
expect_eq "the shipped template applies" "$(status_of "$r")" 200
expect_eq "with its IdlePolicy" "$(body_of "$r" | jq -r '[.items[] | select(.kind == "IdlePolicy")][0] | .name + " " + .action')" \
  "interactive-session-idle created"

# notebook: busy for 1 s, then at 2 %; at most 600 s of execution (bounds what is reclaimed)
ann() {   # ann NAME UTIL [LABEL]: a one-GPU Job with the simulated signal
  job "$1" lab q 1 'sleep 300' "    kueue.x-k8s.io/max-exec-time-seconds: \"600\"${3:+
    $3}" | sed "s|^  namespace: lab|  namespace: lab\n  annotations: {gpuaas.dev/utilization: \"$2\"}|"
}
ann notebook "0s=90,1s=2" > "$TMP/notebook.yaml"
job train lab q 1 'sleep 8; echo trained' > "$TMP/train.yaml"
"$G" submit -f "$TMP/notebook.yaml" >/dev/null
check "notebook runs" wait_phase lab/notebook Running 10
"$G" submit -f "$TMP/train.yaml" >/dev/null
check "train waits for the GPU" until_ok 10 wl_says lab/train "nvidia.com/gpu"
idle_warned() { [[ "$(wl_field lab/notebook '[.conditions[] | select(.type == "IdleWarning")][0].reason')" == Idle ]]; }
check "notebook is warned (IdleWarning on its view)" until_ok 10 idle_warned
check "then train gets the GPU" wait_phase lab/train Running 20
expect_eq "notebook is back in the queue" "$(wl_field lab/notebook .phase)" Pending
expect_eq "requeued for being idle" \
  "$(wl_field lab/notebook '[.conditions[] | select(.type == "Requeued")][0].reason')" Idle
m=$(curl -s "$GPUAAS_SERVER/metrics" | grep '^gpuaas_idle_reclaimed_gpu_hours_total{namespace="lab"}' | awk '{print $2}')
expect_match "reclaimed GPU-hours in /metrics (1 GPU x about 595 s)" "$m" '^0\.16[0-9]*$'
rep=$(api GET '/api/v1/reports/utilization?since=1d&by=namespace' | sed '$d')
expect_match "the utilisation report has the reclaimed GPU-hours too" \
  "$(jq -r '[.. | objects | select(.namespace? == "lab") | .idleReclaimedGpuHours] | first' <<<"$rep")" '^0\.1[67]$'
"$G" cancel lab/notebook >/dev/null

# an exempt priority class is never judged
ann demo "0s=0" 'kueue.x-k8s.io/priority-class: critical' > "$TMP/demo.yaml"
"$G" submit -f "$TMP/demo.yaml" >/dev/null
check "the exempt one runs" wait_phase lab/demo Running 20
sleep 6   # idleFor + grace of the policy, and then some: nothing may happen
expect_eq "and is neither warned nor requeued" \
  "$(wl_field lab/demo '[.conditions[] | select(.type == "IdleWarning" or .type == "Requeued")] | length'):$(wl_field lab/demo .phase)" "0:Running"
"$G" cancel lab/demo >/dev/null
check "demo stops" wait_phase lab/demo Deactivated 20

stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
m2=$(curl -s "$GPUAAS_SERVER/metrics" | grep '^gpuaas_idle_reclaimed_gpu_hours_total{namespace="lab"}' | awk '{print $2}')
expect_eq "the total survives a restart" "$m2" "$m"
finish
