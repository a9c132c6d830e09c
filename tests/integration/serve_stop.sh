#!/usr/bin/env bash
# Stopping work: cancel sends SIGTERM to the pod's process group and SIGKILL after the
# grace period; the maximum execution time deactivates a workload; a pending workload
# can be cancelled too. Real processes.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config stop "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# 1. a polite process: TERM is delivered, it exits, the workload is Deactivated
job polite team-a main 1 'trap "echo got TERM; exit 0" TERM; echo started; while :; do sleep 0.1; done' > "$TMP/polite.yaml"
"$G" submit -f "$TMP/polite.yaml" >/dev/null
wait_phase team-a/polite Running 10 >/dev/null
check "its TERM trap is set" until_ok 10 log_has "$TMP/data/logs/team-a/polite/pod-0.log" started
out=$("$G" cancel team-a/polite 2>&1); rc=$?
expect_eq "cancel exit" "$rc" 0
check "cancelled job is Deactivated" wait_phase team-a/polite Deactivated 10
expect_match "the process got SIGTERM" "$("$G" logs team-a/polite)" "got TERM"
expect_eq "condition says who cancelled" "$(wl_field team-a/polite '[.conditions[] | select(.message | test("cancelled by admin"))] | length > 0')" true

# 2. a stubborn process: TERM ignored, SIGKILL after terminationGracePeriodSeconds (1 s)
GRACE=1 job stubborn team-a main 1 'trap "" TERM; echo started; while :; do sleep 0.1; done' > "$TMP/stubborn.yaml"
"$G" submit -f "$TMP/stubborn.yaml" >/dev/null
wait_phase team-a/stubborn Running 10 >/dev/null
pid=$(wl_field team-a/stubborn '.pods[0].pid')
"$G" cancel team-a/stubborn >/dev/null
check "stubborn job is Terminating first" wait_phase team-a/stubborn Terminating 2
check "stubborn job is killed after its grace period" wait_phase team-a/stubborn Deactivated 10
expect_eq "killed by SIGKILL" "$(wl_field team-a/stubborn '.pods[0].signal')" 9
# (zombies re-parented to a PID 1 that does not reap are not ours to collect)
check "no live process left in its group" bash -c "! ps -o stat= -g $pid | grep -qv '^Z'"

# 3. maximum execution time: the label stops it and says why
job slow team-b main 1 'sleep 30' '    kueue.x-k8s.io/max-exec-time-seconds: "2"' > "$TMP/slow.yaml"
"$G" submit -f "$TMP/slow.yaml" >/dev/null
wait_phase team-b/slow Running 10 >/dev/null
check "max exec time deactivates" wait_phase team-b/slow Deactivated 12
expect_match "reason is MaximumExecutionTimeExceeded" \
  "$(wl_field team-b/slow '[.conditions[].reason] | join(",")')" "MaximumExecutionTimeExceeded"

# 4. cancelling a pending workload: it never starts
cat > "$TMP/big.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: toobig, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  template:
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, "1"], resources: {requests: {cpu: "100"}}}
YAML
"$G" submit -f "$TMP/big.yaml" >/dev/null
check "the scheduler has looked at it" until_ok 10 wl_says team-a/toobig "."
expect_eq "oversized request waits" "$(wl_field team-a/toobig .phase)" Pending
"$G" cancel team-a/toobig >/dev/null
check "pending job cancelled" wait_phase team-a/toobig Deactivated 5
expect_eq "it never ran" "$(wl_field team-a/toobig '.pods | length')" 0
out=$(api POST /api/v1/workloads/team-a/toobig/cancel)
expect_eq "cancelling twice is a conflict" "$(status_of "$out")" 409
finish
