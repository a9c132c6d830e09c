#!/usr/bin/env bash
# Crash consistency (docs/operations.md, "Restart and recovery"): the daemon is killed
# with SIGKILL KILLS times (default 10) at random moments while a stream of submits,
# cancels and gateway key changes goes on, and restarted each time. Then:
#   - every acknowledged submit, cancel, key creation and revocation is there;
#   - no pod ever ran twice at once: each pod's command takes an exclusive lock named for
#     its workload and completion index in a shared folder (flock: the kernel drops it
#     when its holder dies, even by SIGKILL), and a copy that finds it held writes
#     "twice" to a file that must stay empty;
#   - nothing half-written: the database passes SQLite's integrity check, every workload
#     reads back whole and settles (none stuck Admitted with no pod).
# GPUAAS_TEST_START_DELAY_MS (docs/development.md) holds the daemon for a moment after
# each pod's start, so that kills land between a start and its record often: the window
# that once started a pod a second time on recovery.
# bench/crash_soak.sh runs the same with more kills and prints the totals.
source "$(dirname "$0")/lib.sh"
KILLS=${KILLS:-10}
export GPUAAS_TEST_START_DELAY_MS=${GPUAAS_TEST_START_DELAY_MS:-400}
cat > "$TMP/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "32"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: cq}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: free}
spec:
  limits: {requestsPerMinute: 60, tokensPerMinute: 100000}
YAML
cfg=$(RUN_EXTRA="namespaces: {lab: {hostPaths: [$SHARED]}}" write_config crash "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")

# pod NAME GPUS COMPLETIONS: a Job whose every pod holds NAME-INDEX's lock while it runs
pod() {
  local script="exec 9>>$SHARED/$1-\$JOB_COMPLETION_INDEX.lock
if flock -n 9; then echo \"run $1 \$JOB_COMPLETION_INDEX \$\$\" >> $SHARED/runs.log; sleep 3
else echo \"twice $1 \$JOB_COMPLETION_INDEX \$\$\" >> $SHARED/twice.log; fi"
  job "$1" lab q "$2" "$script" "" "$(hostpath_volume)" |
    sed -e "s/^  backoffLimit: 0/  backoffLimit: 0\n  completions: $3\n  parallelism: 1/"
}

SUBMITTED=() CANCELLED=() KEYS=() REVOKED=()
n=0 kills=0
for round in $(seq 1 "$KILLS"); do
  start_daemon "$cfg" || { fail "daemon start $round"; finish; exit 1; }
  disown "$DAEMON_PID" 2>/dev/null   # its SIGKILL is no news
  # the kill: at a random moment within the next 0.2-1.7 s
  ( sleep "0.$((RANDOM % 10 + 2))"; sleep "$((RANDOM % 2)).$((RANDOM % 10))"; kill -KILL "$DAEMON_PID" 2>/dev/null ) &
  killer=$!
  while kill -0 "$DAEMON_PID" 2>/dev/null; do
    n=$((n + 1))
    name=w$n
    r=$(api POST /api/v1/keys -d "{\"name\":\"k$n\",\"tier\":\"free\"}" 2>/dev/null)
    if [[ $(status_of "$r") == 201 ]]; then
      id=$(body_of "$r" | jq -r .key | cut -d_ -f2)
      KEYS+=("$id")
      if ((RANDOM % 2)); then
        r=$(api DELETE "/api/v1/keys/$id" 2>/dev/null)
        [[ $(status_of "$r") =~ ^20 ]] && REVOKED+=("$id")
      fi
    fi
    pod "$name" $((n % 4 == 0)) $((n % 3 == 0 ? 2 : 1)) > "$TMP/$name.yaml"
    r=$(api POST /api/v1/workloads -H 'Content-Type: application/yaml' --data-binary @"$TMP/$name.yaml" 2>/dev/null)
    if [[ $(status_of "$r") == 201 ]]; then
      SUBMITTED+=("$name")
      if ((RANDOM % 2)); then   # cancel it, while it is pending, admitted or starting
        r=$(api POST "/api/v1/workloads/lab/$name/cancel" 2>/dev/null)
        [[ $(status_of "$r") == 200 ]] && CANCELLED+=("$name")
      fi
    fi
    sleep 0.1
  done
  wait "$killer" 2>/dev/null
  wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=""
  kills=$((kills + 1))
  sleep 0.$((RANDOM % 5))
done

start_daemon "$cfg" || { fail "daemon start after the kills"; finish; exit 1; }
expect_eq "survived $kills kills" "$kills" "$KILLS"
check "submits, keys, and cancels or revocations were acknowledged" \
  test "${#SUBMITTED[@]}" -gt 0 -a "${#KEYS[@]}" -gt 0 -a $((${#CANCELLED[@]} + ${#REVOKED[@]})) -gt 0

# every acknowledged change is there
missing=()
for w in "${SUBMITTED[@]}"; do
  [[ $(status_of "$(api GET "/api/v1/workloads/lab/$w")") == 200 ]] || missing+=("$w")
done
expect_eq "every acknowledged submit (${#SUBMITTED[@]}) is there" "${missing[*]}" ""
not_cancelled=()
for w in "${CANCELLED[@]}"; do
  st=$(wl_field "lab/$w" .state)
  [[ $st == Deactivated ]] || not_cancelled+=("$w:$st")
done
expect_eq "every acknowledged cancel (${#CANCELLED[@]}) is there" "${not_cancelled[*]}" ""
keys=$(api GET /api/v1/keys | sed '$d')
lost_keys=() live_revoked=()
for k in "${KEYS[@]}"; do
  jq -e --arg k "$k" '[.items[] | select(.id == $k)] | length == 1' <<<"$keys" >/dev/null || lost_keys+=("$k")
done
for k in "${REVOKED[@]}"; do
  jq -e --arg k "$k" '[.items[] | select(.id == $k and .revokedAt != null)] | length == 1' \
    <<<"$keys" >/dev/null || live_revoked+=("$k")
done
expect_eq "every acknowledged key (${#KEYS[@]}) is there" "${lost_keys[*]}" ""
expect_eq "every acknowledged revocation (${#REVOKED[@]}) is there" "${live_revoked[*]}" ""

# everything settles: the rest run to their end (lost pods are requeued and run again)
for _ in $(seq 1 200); do
  busy=$(api GET /api/v1/workloads | sed '$d' |
    jq '[.items[] | select(.phase != "Succeeded" and .phase != "Failed" and .phase != "Deactivated")] | length')
  [[ $busy == 0 ]] && break
  sleep 0.2
done
expect_eq "every workload settles" "$busy" 0
failed=$(api GET /api/v1/workloads | sed '$d' | jq -r '[.items[] | select(.phase == "Failed") | .name + ": " + .message] | join("; ")')
expect_eq "none failed" "$failed" ""
twice=$(cat "$SHARED/twice.log" 2>/dev/null)
expect_eq "no pod ran twice at once" "$twice" ""
stop_daemon
integrity=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' \
  "$TMP/data/gpuaas.db")
expect_eq "the database is whole" "$integrity" ok
runs=$(wc -l < "$SHARED/runs.log" 2>/dev/null || echo 0)
echo "crash consistency: $kills kills survived, ${#SUBMITTED[@]} workloads, $runs pods run," \
  "$(grep -c . <<<"$twice") run twice, ${#CANCELLED[@]} cancels, ${#KEYS[@]} keys (${#REVOKED[@]} revoked)"
finish
