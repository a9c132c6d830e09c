#!/usr/bin/env bash
# The gateway across restarts of the daemon (docs/gateway.md "Restarts"), after a polite
# stop and after kill -9:
# - rate-limit windows are saved (each second, and at a clean stop) and read back, so a
#   key's budget (spec.limits), a user's (spec.userLimits) and a tier's shared budget
#   (spec.sharedLimits) carry on where they were: x-ratelimit-remaining-tokens continues,
#   it does not start afresh, and a user who spent their requests stays refused;
# - a workload-backed model server is adopted, not replaced: the same process (pid)
#   keeps serving, no second replica or Job appears, and a request sent right after
#   the restart is answered by it; a scaled-to-zero model's running server too, which
#   then idles out as before; a Job of the gateway's name it did not start is replaced.
# build/fake-openai stands in for vLLM (it reports usage like vLLM does).
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
FAKE=$FAKE_OPENAI
cfg=$(write_config rs "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
# windows of 1000 days: no window rolls over while the test runs
cat >"$TMP/m.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: perkey}
spec: {limits: {tokens: [{limit: 100000, window: 1000d}]}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: pooled}
spec: {sharedLimits: {tokens: [{limit: 200000, window: 1000d}]}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: peruser}
spec: {userLimits: {requests: [{limit: 2, window: 1000d}]}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: served}
spec:
  servedNames: [served-model]
  tiers: [perkey, pooled, peruser]
  workload:
    namespace: team-a
    queue: main
    command: ["$FAKE", "--port", "{port}", "--model", "{model}", "--tokens", "7"]
    resources: {cpu: "1", nvidia.com/gpu: "1"}
    replicas: 1
    readinessPath: /health
YAML
check "apply tiers and a workload-backed Model" "$G" apply -f "$TMP/m.yaml"
state() { api GET /api/v1/models/served | sed '$d' | jq -r .state; }
wait_ready() { for _ in $(seq 1 200); do [[ $(state) == Ready ]] && return 0; sleep 0.1; done; return 1; }
check "the model server starts and becomes Ready" wait_ready
KA=$(api POST /api/v1/keys -d '{"name":"a","tier":"perkey"}' | sed '$d' | jq -r .key)
KB=$(api POST /api/v1/keys -d '{"name":"b","tier":"pooled"}' | sed '$d' | jq -r .key)
BODY='{"model":"served-model","messages":[{"role":"user","content":"one two three"}],"max_tokens":50}'
# spend KEY: one request; prints "STATUS REMAINING_TOKENS"
spend() {
  curl -s -D - -o /dev/null -H "Authorization: Bearer $1" -d "$BODY" "$GPUAAS_SERVER/v1/chat/completions" | tr -d '\r' |
    awk -F': ' 'NR==1{s=$0; sub(/^HTTP\/[0-9.]+ /,"",s); sub(/ .*/,"",s)} tolower($1)=="x-ratelimit-remaining-tokens"{r=$2} END{print s, r}'
}
# unsaved: buckets not yet handed to the store, plus rows the store's writer has not committed
unsaved() { curl -s "$GPUAAS_SERVER/metrics" | awk '$1=="gpuaas_gateway_rate_limit_buckets_unsaved" || $1=="gpuaas_store_rows_pending"{n+=$2; k++} END{print k == 2 ? n : -1}'; }
wait_saved() { for _ in $(seq 1 100); do [[ $(unsaved) == 0 ]] && return 0; sleep 0.1; done; return 1; }
server() { wl_field team-a/maas-served-0 "$1"; }

# each request charges the same real usage; the header shows what is left minus the
# request's own reservation, so consecutive identical requests step down by that usage
read -r sa1 a1 <<<"$(spend "$KA")"; read -r sa2 a2 <<<"$(spend "$KA")"
read -r sb1 b1 <<<"$(spend "$KB")"; read -r sb2 b2 <<<"$(spend "$KB")"
expect_eq "requests with a per-key and a pooled key are served" "$sa1 $sa2 $sb1 $sb2" "200 200 200 200"
da=$((a1 - a2)); db=$((b1 - b2))
expect_eq "each request charges its real usage (key and tier alike)" "$((da > 0 && da == db))" 1
pid=$(server '.pods[0].pid')
port=$(api GET /api/v1/models/served | sed '$d' | jq -r '.replicaStatus[0].url' | sed 's/.*://')
expect_match "the model server runs (pid $pid, port $port)" "$pid $port" '^[0-9]+ [0-9]+$'

# after a restart: the next request of the same key continues from what was used, and
# is served right away by the same model server, which is the only one
after_restart() {  # LABEL EXPECTED_A EXPECTED_B
  local sa a sb b
  read -r sa a <<<"$(spend "$KA")"
  read -r sb b <<<"$(spend "$KB")"
  expect_eq "$1: a request right after the restart is served" "$sa $sb" "200 200"
  expect_eq "$1: the key's budget carried over (remaining tokens)" "$a" "$2"
  expect_eq "$1: the tier's shared budget carried over" "$b" "$3"
  expect_eq "$1: the same model server process serves (pid)" "$(server '.pods[0].pid') $(server .phase)" "$pid Running"
  check "$1: ...and it is alive" kill -0 "$pid"
  expect_eq "$1: no second pod, replica or Job" \
    "$(server '.pods|length') $(api GET /api/v1/models/served | sed '$d' | jq -r '.replicas, .replicaStatus[0].restarts' | xargs)" "1 1 0"
  expect_eq "$1: ...on the same port" "$(api GET /api/v1/models/served | sed '$d' | jq -r '.replicaStatus[0].url' | sed 's/.*://')" "$port"
  expect_eq "$1: one model server process on that port" "$(pgrep -fc -- "^$FAKE --port $port ")" 1
  expect_eq "$1: no Job of the gateway was added" \
    "$(api GET '/api/v1/workloads?namespace=team-a' | sed '$d' | jq -r '[.items[]? | select(.name|startswith("maas-"))] | length')" 1
}

check "windows saved before a polite stop" wait_saved
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
after_restart "polite stop" "$((a2 - da))" "$((b2 - db))"
expect_match "the daemon says it adopted the server" "$(grep -c 'adopted its server team-a/maas-served-0' "$TMP/serve.log")" '^1$'

# kill -9: what was saved by the last flush (each second) survives
check "windows saved within a flush interval" wait_saved
crash_daemon
start_daemon "$cfg" || { fail "daemon restart after kill -9"; finish; exit 1; }
after_restart "kill -9" "$((a2 - 2 * da))" "$((b2 - 2 * db))"

# a scaled-to-zero model whose server was running: adopted too, then idles out as usual
cat >"$TMP/lazy.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: lazy}
spec:
  servedNames: [lazy-model]
  tiers: [perkey]
  workload:
    namespace: team-b
    queue: main
    command: ["$FAKE", "--port", "{port}", "--model", "{model}"]
    resources: {cpu: "1", nvidia.com/gpu: "1"}
    minReplicas: 0
    idleSeconds: 3
YAML
check "apply a scale-to-zero Model" "$G" apply -f "$TMP/lazy.yaml"
lazy() { api GET /api/v1/models/lazy | sed '$d' | jq -r .state; }
wait_lazy() { for _ in $(seq 1 $(($2 * 10))); do [[ $(lazy) == "$1" ]] && return 0; sleep 0.1; done; return 1; }
LBODY='{"model":"lazy-model","messages":[{"role":"user","content":"hi"}],"max_tokens":5}'
lcall() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KA" -d "$LBODY" "$GPUAAS_SERVER/v1/chat/completions"; }
expect_eq "its first request starts it" "$(lcall)" 503
check "...it becomes Ready" wait_lazy Ready 20
lpid=$(wl_field team-b/maas-lazy-0 '.pods[0].pid')
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "after a restart its server answers at once (no 503 starting)" "$(lcall)" 200
expect_eq "...the same process" "$(wl_field team-b/maas-lazy-0 '.pods[0].pid')" "$lpid"
check "...and it still scales to zero when idle" wait_lazy ScaledToZero 20
lgone() { for _ in $(seq 1 100); do [[ $(api GET /api/v1/workloads/team-b/maas-lazy-0 | tail -1) == 404 ]] && return 0; sleep 0.1; done; return 1; }
check "...its Job is gone" lgone

# a Job of the gateway's name that the gateway did not start is replaced, not adopted
check "delete the model" api DELETE /api/v1/models/served
gone() { for _ in $(seq 1 100); do [[ $(api GET /api/v1/workloads/team-a/maas-served-0 | tail -1) == 404 ]] && return 0; sleep 0.1; done; return 1; }
check "...its server is stopped and its Job deleted" gone
job maas-served-0 team-a main 0 "exec $FAKE --port $port --model served-model" > "$TMP/imp.yaml"
check "someone submits a Job of that name" "$G" submit -f "$TMP/imp.yaml"
wait_phase team-a/maas-served-0 Running 10 >/dev/null
adoptions=$(grep -c 'adopted its server team-a/maas-served-0' "$TMP/serve.log")
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
check "apply the model again" "$G" apply -f "$TMP/m.yaml"
check "the model becomes Ready" wait_ready
expect_eq "...on a server the gateway started, not the impostor" \
  "$(server '.podSets[0].requests["nvidia.com/gpu"]') $(grep -c 'adopted its server team-a/maas-served-0' "$TMP/serve.log")" "1 $adoptions"
# a user's window (spec.userLimits, across their keys) carries over too: two requests of
# the two allowed, then a kill -9; the next request, on either key, is refused at once
U1=$(api POST /api/v1/keys -d '{"name":"u1","tier":"peruser"}' | sed '$d' | jq -r .key)
U2=$(api POST /api/v1/keys -d '{"name":"u2","tier":"peruser"}' | sed '$d' | jq -r .key)
read -r su1 _ <<<"$(spend "$U1")"; read -r su2 _ <<<"$(spend "$U2")"
expect_eq "a user's two keys of a tier with userLimits: 2 requests of 2 served" "$su1 $su2" "200 200"
check "the user's window is saved within a flush interval" wait_saved
crash_daemon
start_daemon "$cfg" || { fail "daemon restart after kill -9"; finish; exit 1; }
check "the model is Ready after the restart" wait_ready
out=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $U2" -d "$BODY" "$GPUAAS_SERVER/v1/chat/completions")
expect_eq "right after the restart the user's window still counts: 429 requests" \
  "$(status_of "$out") $(body_of "$out" | jq -r .error.type)" "429 requests"
expect_match "...naming the user's limit" "$(body_of "$out" | jq -r .error.message)" 'user admin \(tier peruser, all their keys\).*Used 2'
expect_eq "...and on the other key too" "$(spend "$U1" | cut -d' ' -f1)" 429

# stop the model server (a stopped daemon leaves workloads running)
check "delete the model at the end" api DELETE /api/v1/models/served
check "...its server is stopped" gone
finish
