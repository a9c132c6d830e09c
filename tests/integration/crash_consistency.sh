#!/usr/bin/env bash
# Crash consistency (docs/operations.md, "Restart and recovery"): the daemon is killed
# with SIGKILL KILLS times (default 10) at random moments while a stream of submits,
# cancels, gateway key changes and streamed chat completions through the gateway goes on,
# and restarted each time. Then:
#   - every acknowledged submit, cancel, key creation and revocation is there;
#   - usage is never double counted: every key makes one streamed request, so the usage
#     records hold at most one request per key and at most the tokens that one request
#     can be charged (what a whole stream reported), and a stream the client saw end is
#     charged no more than it reported;
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
{ queues cq 32 2
  printf -- '---\napiVersion: gpuaas.dev/v1alpha1\nkind: Tier\nmetadata: {name: free}\nspec:\n  limits: {requestsPerMinute: 60, tokensPerMinute: 100000}\n'
} > "$TMP/queues.yaml"
# The model the gateway streams from: the project's stand-in for vLLM, slow enough (8
# tokens, 40 ms apart) that kills land in the middle of streams.
start_fake up --tokens 8 --token-ms 40 || { fail "start the fake model server"; finish; exit 1; }
printf -- '---\napiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: fake}\nspec: {servedNames: [fake-model], tiers: [free], url: "http://127.0.0.1:%s/v1"}\n' \
  "$(cat "$TMP/up.port")" >> "$TMP/queues.yaml"
cfg=$(RUN_EXTRA="namespaces: {lab: {hostPaths: [$SHARED]}}" write_config crash "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
STREAM_BODY='{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"max_tokens":8,"messages":[{"role":"user","content":"count to eight"}]}'
# stream ID KEY: one streamed chat completion in the background; its answer is in $TMP/s-ID.out
stream() {
  curl -s -N -m 20 -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    -d "$STREAM_BODY" "$GPUAAS_SERVER/v1/chat/completions" > "$TMP/s-$1.out" 2>/dev/null &
  STREAMERS+=($!)
}

# pod NAME GPUS COMPLETIONS: a Job whose every pod holds NAME-INDEX's lock while it runs
pod() {
  local script="exec 9>>$SHARED/$1-\$JOB_COMPLETION_INDEX.lock
if flock -n 9; then echo \"run $1 \$JOB_COMPLETION_INDEX \$\$\" >> $SHARED/runs.log; sleep 3
else echo \"twice $1 \$JOB_COMPLETION_INDEX \$\$\" >> $SHARED/twice.log; fi"
  job "$1" lab q "$2" "$script" "" "$(hostpath_volume)" |
    sed -e "s/^  backoffLimit: 0/  backoffLimit: 0\n  completions: $3\n  parallelism: 1/"
}

SUBMITTED=() CANCELLED=() KEYS=() REVOKED=() STREAMERS=()
n=0 kills=0
for round in $(seq 1 "$KILLS"); do
  start_daemon "$cfg" || { fail "daemon start $round"; finish; exit 1; }
  disown "$DAEMON_PID" 2>/dev/null   # its SIGKILL is no news
  # the kill: at a random moment within the next 0.2-2.8 s (a submit's answer waits for
  # its fsync and the scheduling pass that starts its pod, 400 ms of test delay each)
  ( sleep "0.$((RANDOM % 10 + 2))"; sleep "$((RANDOM % 3)).$((RANDOM % 10))"; kill -KILL "$DAEMON_PID" 2>/dev/null ) &
  killer=$!
  while kill -0 "$DAEMON_PID" 2>/dev/null; do
    n=$((n + 1))
    name=w$n
    r=$(api POST /api/v1/keys -d "{\"name\":\"k$n\",\"tier\":\"free\"}" 2>/dev/null)
    if [[ $(status_of "$r") == 201 ]]; then
      secret=$(body_of "$r" | jq -r .key)
      id=$(cut -d_ -f2 <<<"$secret")
      KEYS+=("$id")
      stream "$id" "$secret"
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

# usage: each key made one streamed request, so at most one request and one stream's
# tokens per key; a stream seen whole is charged at most what it reported
for p in "${STREAMERS[@]}"; do wait "$p" 2>/dev/null; done
whole=0 full=""
for k in "${KEYS[@]}"; do
  u=$(grep -o '"usage":{[^}]*}' "$TMP/s-$k.out" 2>/dev/null | tail -1)
  [[ -n $u ]] && grep -q 'data: \[DONE\]' "$TMP/s-$k.out" && { whole=$((whole + 1)); full=${full:-$(sed 's/.*"total_tokens":\([0-9]*\).*/\1/' <<<"$u")}; }
done
check "some streams ran whole between the kills ($whole)" test "$whole" -gt 0
usage=$(api GET '/api/v1/usage?group_by=key&since=1h' | sed '$d')
over=$(jq -r --argjson full "${full:-0}" '[.items[] | select(.requests > 1 or .totalTokens > $full) | "\(.group): \(.requests) requests, \(.totalTokens) tokens"] | join("; ")' <<<"$usage")
expect_eq "no key charged more than its one stream (${full:-?} tokens)" "$over" ""

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
  "$(grep -c . <<<"$twice") run twice, ${#CANCELLED[@]} cancels, ${#KEYS[@]} keys (${#REVOKED[@]} revoked)," \
  "${#STREAMERS[@]} streams ($whole whole), usage $(jq '[.items[].requests] | add // 0' <<<"$usage") requests / $(jq '[.items[].totalTokens] | add // 0' <<<"$usage") tokens"
finish
