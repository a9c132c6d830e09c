#!/usr/bin/env bash
# A Job's whole life through the CLI and the REST API: apply, submit, run with its GPU
# in CUDA_VISIBLE_DEVICES, logs (also followed), ls/show/queues/gpus, /metrics,
# several pods, failures. Real daemon, real processes, real HTTP over loopback.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config life "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

check "healthz" curl -sf "$GPUAAS_SERVER/healthz"
check "health (vLLM's probe path) needs no token" curl -sf "$GPUAAS_SERVER/health"
check "readyz" curl -sf "$GPUAAS_SERVER/readyz"
out=$("$G" apply -f "$ROOT/examples/demo/queues.yaml" 2>&1); rc=$?
expect_eq "apply exit" "$rc" 0
expect_match "apply reports unchanged objects" "$out" "unchanged"

job hello team-a main 1 'echo "gpus=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES idx=$JOB_COMPLETION_INDEX"; sleep 1; echo bye' > "$TMP/hello.yaml"
out=$("$G" submit -f "$TMP/hello.yaml" 2>&1); rc=$?
expect_eq "submit exit" "$rc" 0
expect_match "submit names the workload" "$out" "team-a/hello"
check "hello runs" wait_phase team-a/hello Running 10
check "hello succeeds" wait_phase team-a/hello Succeeded 15
logs=$("$G" logs team-a/hello 2>&1)
expect_match "logs show the GPU UUID in CUDA_VISIBLE_DEVICES" "$logs" "gpus=GPU-5d1e0a7c-0000-4000-8000-00000000000[01] nv=GPU-"
expect_match "logs hold the whole output" "$logs" "bye"
expect_eq "pod exit code recorded" "$(wl_field team-a/hello '.pods[0].exitCode')" 0
expect_eq "finished condition" "$(wl_field team-a/hello '[.conditions[].type] | index("Finished") != null')" true

ls_out=$("$G" ls 2>&1)
expect_match "ls has a header" "$ls_out" "NAMESPACE +NAME +QUEUE +PRIORITY +STATE"
expect_match "ls lists the job as Succeeded" "$ls_out" "team-a +hello +main .*Succeeded"
expect_eq "ls -o json is JSON" "$("$G" ls -o json | jq -r 'if type == "array" then .[0].name else .items[0].name end')" hello
show=$("$G" show team-a/hello 2>&1)
expect_match "show has conditions with reasons" "$show" "QuotaReserved"
expect_match "show has devices" "$show" "GPU-5d1e0a7c"
check "show -o yaml" bash -c "\"$G\" show team-a/hello -o yaml | grep -q 'name: hello'"
expect_match "queues shows team-a" "$("$G" queues 2>&1)" "team-a"
expect_match "gpus lists both GPUs" "$("$G" gpus 2>&1)" "demo-node +1 +H100-80GB"
expect_eq "gpus -o json has both UUIDs" "$("$G" gpus -o json | jq -r '[.. | .uuid? // empty] | unique | length')" 2
metrics=$(curl -s "$GPUAAS_SERVER/metrics")
expect_match "metrics count the admission" "$metrics" 'kueue_admitted_workloads_total\{cluster_queue="team-a",priority_class=""\} 1'
expect_match "metrics show usage gauge" "$metrics" 'kueue_cluster_queue_resource_usage\{cohort="[^"]*",cluster_queue="team-a",flavor="h100",resource="nvidia.com/gpu"\}'
expect_match "metrics show pending gauge" "$metrics" 'kueue_pending_workloads\{cluster_queue="team-b",status="active"\} 0'

# logs -f follows until the workload ends
job chatty team-b main 1 'for i in 1 2 3 4; do echo line-$i; sleep 0.5; done' > "$TMP/chatty.yaml"
"$G" submit -f "$TMP/chatty.yaml" >/dev/null
wait_phase team-b/chatty Running 10 >/dev/null
follow=$(timeout 20 "$G" logs -f team-b/chatty 2>&1); rc=$?
expect_eq "logs -f ends when the job ends" "$rc" 0
expect_match "logs -f saw the last line" "$follow" "line-4"

# parallelism 2, completions 4: four pods, two at a time, output prefixed per pod
cat > "$TMP/multi.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: multi, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  parallelism: 2
  completions: 4
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo pod \$JOB_COMPLETION_INDEX; sleep 0.3"]
        resources: {requests: {cpu: "1"}}
YAML
"$G" submit -f "$TMP/multi.yaml" >/dev/null
check "4 completions succeed" wait_phase team-a/multi Succeeded 20
expect_eq "4 pods succeeded" "$(wl_field team-a/multi .succeededPods)" 4
mlogs=$("$G" logs team-a/multi)
expect_match "per-pod prefixes" "$mlogs" "\[pod 3\] pod 3"

# a failing command fails the Job with its exit code
job boom team-b main 0 'echo about to fail; exit 3' > "$TMP/boom.yaml"
"$G" submit -f "$TMP/boom.yaml" >/dev/null
check "failing job is Failed" wait_phase team-b/boom Failed 10
expect_match "failure message names the code" "$(wl_field team-b/boom .message)" "exited with code 3"
# a command that does not exist is reported at once
job nocmd team-b main 0 'true' | sed 's/command: \["sh", "-c", "true"\]/command: ["no-such-binary-xyz"]/' > "$TMP/nocmd.yaml"
"$G" submit -f "$TMP/nocmd.yaml" >/dev/null
check "missing binary fails the job" wait_phase team-b/nocmd Failed 10
expect_match "missing binary message" "$(wl_field team-b/nocmd .message)" "cannot run \"no-such-binary-xyz\""

# deleting a finished workload removes it; deleting a running one is refused
out=$(api DELETE /api/v1/workloads/team-b/boom)
expect_eq "delete finished workload" "$(status_of "$out")" 200
expect_eq "deleted workload is gone" "$(status_of "$(api GET /api/v1/workloads/team-b/boom)")" 404
finish
