#!/usr/bin/env bash
# Restart and recovery (docs/operations.md): after a polite stop or a kill -9 every
# workload, condition and log is still there; running pods are re-adopted; a pod that
# ended while the daemon was down is settled from the status its shim recorded; a
# workload whose processes vanished is requeued with reason ProcessesLost.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config restart "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

job survivor team-a main 1 'for i in 1 2 3 4 5 6; do echo tick-$i; sleep 1; done' > "$TMP/survivor.yaml"
job quick team-b main 1 'echo quick-start; sleep 1; echo quick-end' > "$TMP/quick.yaml"
job done-before team-b main 0 'echo early' > "$TMP/early.yaml"
"$G" submit -f "$TMP/early.yaml" >/dev/null
wait_phase team-b/done-before Succeeded 10 >/dev/null
adm=$(wl_field team-b/done-before .admittedAt)
"$G" submit -f "$TMP/survivor.yaml" >/dev/null
"$G" submit -f "$TMP/quick.yaml" >/dev/null
wait_phase team-a/survivor Running 10 >/dev/null
wait_phase team-b/quick Running 10 >/dev/null
pid=$(wl_field team-a/survivor '.pods[0].pid')

# kill -9 the daemon; the quick job ends while it is down
crash_daemon
check "the quick job ends while the daemon is down" until_ok 10 log_has "$TMP/data/logs/team-b/quick/pod-0.log" quick-end
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "finished workload still there" "$(wl_field team-b/done-before .phase)" Succeeded
expect_eq "its conditions survived" "$(wl_field team-b/done-before '[.conditions[].type] | join(",")')" "QuotaReserved,Admitted,Finished"
expect_eq "its admittedAt survived" "$(wl_field team-b/done-before .admittedAt)" "$adm"
expect_eq "and is not the epoch" "$([[ $adm == 20* ]] && echo real)" real
expect_eq "its log survived" "$("$G" logs team-b/done-before)" early
expect_eq "running pod re-adopted (same pid)" "$(wl_field team-a/survivor '.pods[0].pid')" "$pid"
expect_eq "re-adopted workload is Running" "$(wl_field team-a/survivor .phase)" Running
check "pod that ended while down is settled" wait_phase team-b/quick Succeeded 5
expect_match "its whole log is there" "$("$G" logs team-b/quick)" "quick-end"
check "re-adopted workload finishes" wait_phase team-a/survivor Succeeded 10
expect_match "log complete across the restart" "$("$G" logs team-a/survivor)" "tick-6"

# processes lost while the daemon is down: requeued, then run again
job fragile team-a main 1 'echo run; sleep 30' > "$TMP/fragile.yaml"
"$G" submit -f "$TMP/fragile.yaml" >/dev/null
wait_phase team-a/fragile Running 10 >/dev/null
fpid=$(wl_field team-a/fragile '.pods[0].pid')
crash_daemon
kill -KILL -- "-$fpid" 2>/dev/null
check "its processes are gone" until_ok 5 eval "! kill -0 $fpid"
start_daemon "$cfg" || { fail "daemon restart 2"; finish; exit 1; }
# Kueue keeps the Evicted condition after readmission as False, "Previously: <message>"
expect_match "lost processes are reported" "$(wl_field team-a/fragile '[.conditions[] | .type + ":" + .message] | join(",")')" "Evicted:.*gone when gpuaas restarted"
check "requeued workload runs again" wait_phase team-a/fragile Running 10
expect_eq "it runs with a new process" "$([[ "$(wl_field team-a/fragile '.pods[0].pid')" != "$fpid" ]] && echo new)" new

# a polite stop leaves it running; the next start adopts it
stop_daemon
start_daemon "$cfg" || { fail "daemon restart 3"; finish; exit 1; }
expect_eq "admittedAt still right after two more restarts" "$(wl_field team-b/done-before .admittedAt)" "$adm"
expect_eq "still running after a polite restart" "$(wl_field team-a/fragile .phase)" Running
"$G" cancel team-a/fragile >/dev/null
check "and can still be cancelled" wait_phase team-a/fragile Deactivated 10
expect_eq "admin token unchanged across restarts" "$(api GET /api/v1/whoami | sed '$d' | jq -r .name)" admin
finish
