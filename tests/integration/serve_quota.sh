#!/usr/bin/env bash
# Quota: with one GPU of nominal quota and no cohort, a second one-GPU job waits,
# with its reason and queue position, until the first ends; priority orders the queue.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
{ queues solo 8 1 "queueingStrategy: StrictFIFO"
  printf -- '---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n'
} > "$TMP/queues.yaml"
cfg=$(write_config quota "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# first holds the one GPU until the checks below are done, then is cancelled (a fixed
# sleep could end before them on a loaded machine)
job first lab q 1 'sleep 120' > "$TMP/first.yaml"
job second lab q 1 'echo second ran' > "$TMP/second.yaml"
job third lab q 1 'echo third ran' '    kueue.x-k8s.io/priority-class: urgent' > "$TMP/third.yaml"
"$G" submit -f "$TMP/first.yaml" >/dev/null
wait_phase lab/first Running 10 >/dev/null
"$G" submit -f "$TMP/second.yaml" >/dev/null
check "the scheduler has looked at the second" until_ok 10 wl_says lab/second "nvidia.com/gpu"
"$G" submit -f "$TMP/third.yaml" >/dev/null
check "and at the third" until_ok 10 wl_says lab/third "nvidia.com/gpu"
expect_eq "second waits for quota" "$(wl_field lab/second .phase)" Pending
expect_match "pending reason names the quota" "$(wl_field lab/second .message)" "nvidia.com/gpu"
expect_eq "higher priority goes first in the queue" "$(wl_field lab/third .positionInClusterQueue)" 0
expect_eq "second is behind it" "$(wl_field lab/second .positionInClusterQueue)" 1
expect_eq "queue counts two pending" "$(api GET /api/v1/clusterqueues/solo | sed '$d' | jq .pendingWorkloads)" 2
expect_match "ls shows the position" "$("$G" ls -n lab 2>&1)" "second .*Pending"
"$G" cancel lab/first >/dev/null
check "first is cancelled, freeing the GPU" wait_phase lab/first Deactivated 20
check "then the urgent one runs" wait_phase lab/third Succeeded 10
check "then the second one" wait_phase lab/second Succeeded 10
t3=$(wl_field lab/third .admittedAt); t2=$(wl_field lab/second .admittedAt)
expect_eq "admission order follows priority" "$([[ "$t3" < "$t2" || "$t3" == "$t2" ]] && echo yes)" yes

# An apply the scratch engine accepts but the live one refuses (a Node replaced under a
# running workload) is refused as a whole: nothing recorded, so the same file applied
# once the node is free is taken and takes effect. (It used to be recorded and answered
# 200 while the engine kept the old node: the next apply said "unchanged".)
head -n -3 "$ROOT/examples/demo/node.yaml" > "$TMP/one-gpu.yaml"   # drop the second GPU
expect_eq "the edited node has one GPU" "$(grep -c 'model: H100' "$TMP/one-gpu.yaml")" 1
job holder lab q 1 'sleep 30' > "$TMP/holder.yaml"
"$G" submit -f "$TMP/holder.yaml" >/dev/null
check "holder runs" wait_phase lab/holder Running 10
r=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$TMP/one-gpu.yaml")
expect_eq "replacing a node under a workload is refused" "$(status_of "$r")" 409
expect_match "and says why" "$(body_of "$r" | jq -r .error.message)" "workloads placed"
expect_eq "the node keeps its two GPUs" "$(api GET /api/v1/nodes/demo-node | sed '$d' | jq '.spec.gpus | length')" 2
"$G" cancel lab/holder >/dev/null
check "holder stops" wait_phase lab/holder Deactivated 20
r=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$TMP/one-gpu.yaml")
expect_eq "once free, the same file is taken (not 'unchanged')" "$(body_of "$r" | jq -r '.items[0].action')" created
expect_eq "and the node has one GPU" "$(api GET /api/v1/nodes/demo-node | sed '$d' | jq '.spec.gpus | length')" 1
finish
