#!/usr/bin/env bash
# The gateway's routing, cancellation and accounting, end to end over real HTTP on
# loopback against the real daemon. build/fake-openai stands in for vLLM (no GPU or
# model here); each instance reports at /stats what it saw: streams in progress, plain
# answers it is holding (--paced-plain answers after max_tokens x the pace, as a real
# server answers once it has generated them), requests whose client went away.
# Covers:
#  - routing by least outstanding requests among two ready replicas: held streams are
#    spread by the count in flight (the fakes' own counts and the gateway's model view
#    agree), and new requests, streamed or not, go to the replica with fewer;
#  - a client leaving during a NON-streamed request cancels the upstream request at
#    once (the model server sees its connection close long before its answer was due),
#    and a usage record with status 499 is written;
#  - reservations and maxConcurrentRequests slots are given back after a client leaves
#    (streamed and not) and after upstream errors (500, an answer cut halfway, streamed
#    or not): the next answer's x-ratelimit-remaining-tokens is exactly the limit minus
#    the tokens charged (the usage records), and the single concurrency slot is free;
#  - {share} (and {model}, {port}) in a spec.workload command template;
#  - GET /api/v1/usage?group_by=key|namespace and since= sums, from known token counts.
# Every wait is a bounded poll; nothing decides pass or fail on a fixed sleep.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
start_fake a --paced-plain --token-ms 20 && start_fake b --paced-plain --token-ms 20 &&
  start_fake c --paced-plain --token-ms 100 || { fail "fake model servers start"; finish; exit 1; }
PA=$(cat "$TMP/a.port") PB=$(cat "$TMP/b.port") PC=$(cat "$TMP/c.port")
st() { curl -s -m 2 "http://127.0.0.1:$1/stats" | jq -r "$2"; }   # st PORT JQ: what a fake saw
# within SECONDS CMD...: poll CMD every 50 ms until it succeeds; fails after SECONDS
within() { local n=$(($1 * 20)); shift; for _ in $(seq 1 "$n"); do "$@" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
is() { [[ "$(eval "$1")" == "$2" ]]; }                               # is 'CMD' VALUE

export GPUAAS_GATEWAY_HEARTBEAT_MS=100   # departed stream clients are found within 0.1 s
cfg=$(write_config rt "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

cat >"$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 100000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: metered}
spec:
  # one window of 100 years: it cannot roll over during the test
  limits: {tokens: [{limit: 100000, window: 36500d}], requests: [{limit: 1000, window: 36500d}], maxConcurrentRequests: 1}
  maxTokensPerRequest: 1000
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: pair}
spec: {servedNames: [pair-model], tiers: [open], urls: ["http://127.0.0.1:$PA", "http://127.0.0.1:$PB"]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: solo}
spec: {servedNames: [solo-model], tiers: [open, metered], url: "http://127.0.0.1:$PC"}
YAML
check "apply Tiers and Models" "$G" apply -f "$TMP/models.yaml"
model() { api GET "/api/v1/models/$1" | sed '$d' | jq -r "$2"; }
check "both replicas of pair become ready" within 20 is 'model pair .readyReplicas' 2
check "solo becomes ready" within 20 is 'model solo .state' Ready

newkey() {  # newkey TIER [NAMESPACE]: a key's full text
  local ns=${2:+,\"namespace\":\"$2\"}
  api POST /api/v1/keys -d "{\"name\":\"k$RANDOM\",\"tier\":\"$1\"$ns}" | sed '$d' | jq -r .key
}
chat() { printf '{"model":"%s","messages":[{"role":"user","content":"%s"}],"max_tokens":%s%s}' "$1" "$2" "$3" "${4:-}"; }
v1() {  # v1 KEY PATH [curl args]: body then status
  local k=$1 p=$2; shift 2
  curl -s -m 20 -H "Authorization: Bearer $k" -H 'Content-Type: application/json' -w '\n%{http_code}' "$@" "$GPUAAS_SERVER/v1/$p"
}
OPEN=$(newkey open)

# ---- routing: least outstanding requests among ready replicas -----------------------------
# A stream of 300 tokens at 200 ms each (SLOW) stays open for a minute: until it is killed.
declare -A SPID WHERE
live_a() { st "$PA" .liveStreams; }
live_b() { st "$PB" .liveStreams; }
open_stream() {  # open_stream NAME: a held stream to pair-model; WHERE[NAME] = the replica that took it
  local a b
  a=$(live_a) b=$(live_b)
  curl -s -N -m 120 -H "Authorization: Bearer $OPEN" -d "$(chat pair-model 'SLOW hold on' 300 ',"stream":true')" \
    "$GPUAAS_SERVER/v1/chat/completions" >"$TMP/$1.out" 2>&1 &
  SPID[$1]=$!
  if ! within 10 is 'echo $(( $(live_a) + $(live_b) ))' $((a + b + 1)); then WHERE[$1]=none; return; fi
  if (( $(live_a) > a )); then WHERE[$1]=A; else WHERE[$1]=B; fi
}
close_stream() { kill "${SPID[$1]}" 2>/dev/null; wait "${SPID[$1]}" 2>/dev/null; }
outstanding() {  # outstanding PORT: the gateway's count in flight to that replica
  model pair ".replicaStatus[] | select(.url == \"http://127.0.0.1:$1\") | .outstanding"
}
counts() { echo "A=$(live_a) B=$(live_b) gw=$(outstanding "$PA"),$(outstanding "$PB")"; }

open_stream s1; open_stream s2
expect_eq "two streams: one on each replica" "$(printf '%s\n' "${WHERE[s1]}" "${WHERE[s2]}" | sort | tr -d '\n')" AB
open_stream s3; open_stream s4
expect_eq "four streams: two on each (the fakes' counts and the gateway's view)" "$(counts)" "A=2 B=2 gw=2,2"
# empty replica B: both new streams must go there (round-robin alone would send one to A)
for s in s1 s2 s3 s4; do [[ ${WHERE[$s]} == B ]] && close_stream "$s"; done
check "the streams on B end when their clients leave" within 10 is 'echo $(live_b)' 0
check "...and the gateway counts none in flight there" within 10 is "outstanding $PB" 0
open_stream s5; open_stream s6
expect_eq "new streams go to the replica with fewer in flight" "${WHERE[s5]}${WHERE[s6]}" BB
expect_eq "...two on each again" "$(counts)" "A=2 B=2 gw=2,2"
# one fewer on A: a plain (non-streamed) request goes there
for s in s1 s2 s3 s4; do [[ ${WHERE[$s]} == A ]] && { close_stream "$s"; break; }; done
check "one stream left on A" within 10 is 'echo $(live_a)$(outstanding '"$PA"')' 11
# (its answer is due after 500 x 20 ms = 10 s)
curl -s -m 60 -H "Authorization: Bearer $OPEN" -d "$(chat pair-model 'take your time' 500)" \
  "$GPUAAS_SERVER/v1/chat/completions" -o /dev/null &
SPID[plain]=$!
check "a plain request goes to the replica with fewer in flight" within 10 is 'echo $(st '"$PA"' .held)$(st '"$PB"' .held)' 10
expect_eq "...the gateway counts it there" "$(outstanding "$PA") $(outstanding "$PB")" "2 2"
for s in "${!SPID[@]}"; do close_stream "$s"; done
check "every stream ended" within 10 is 'echo $(live_a)$(live_b)$(outstanding '"$PA"')$(outstanding '"$PB"')' 0000
# nothing in flight anywhere: ties go round the replicas
a=$(st "$PA" .posts) b=$(st "$PB" .posts) codes=""
for _ in 1 2 3 4 5 6; do codes+="$(status_of "$(v1 "$OPEN" chat/completions -d "$(chat pair-model 'FAST hi' 1)")") "; done
expect_eq "sequential requests alternate between idle replicas" "$codes$(($(st "$PA" .posts) - a)) $(($(st "$PB" .posts) - b))" \
  "200 200 200 200 200 200 3 3"

# ---- a client leaving a NON-streamed request cancels it upstream ---------------------------
# solo's server (fake c) answers 300 tokens after 300 x 100 ms = 30 s
before=$(st "$PC" .cancelledPlain)
curl -s -m 60 -H "Authorization: Bearer $OPEN" -d "$(chat solo-model 'a long answer' 300)" \
  "$GPUAAS_SERVER/v1/chat/completions" -o "$TMP/left.out" &
LEFT=$!
check "the model server is generating the plain answer" within 10 is "st $PC .held" 1
kill "$LEFT"; wait "$LEFT" 2>/dev/null
check "client gone: the upstream request is cancelled at once (not after the 30 s answer)" \
  within 5 is "st $PC '.cancelledPlain - $before'" 1
expect_eq "...the model server holds nothing" "$(st "$PC" .held)" 0
OPEN_ID=$(cut -d_ -f2 <<<"$OPEN")
last_status() {  # last_status KEY_ID: status and stream flag of the key's latest usage record
  api GET /api/v1/usage >/dev/null   # hands pending records to the store and waits for them
  sqlite3 "$TMP/data/gpuaas.db" "select status || ' ' || stream from usage where key_id = '$1' order by seq desc limit 1"
}
check "...a usage record with status 499 is written" within 5 is "last_status $OPEN_ID" "499 0"

# ---- reservations and concurrency slots come back after disconnects and upstream errors ----
M=$(newkey metered)
M_ID=$(cut -d_ -f2 <<<"$M")
charged() {  # tokens charged to key M so far (its usage records)
  api GET '/api/v1/usage?group_by=key&since=1h' | sed '$d' | jq -r --arg k "$M_ID" '[.items[] | select(.group == $k) | .totalTokens] | add // 0'
}
probe() {  # a small request: "STATUS REMAINING-TOKENS"; REMAINING-REQUESTS in $PREQ
  local out
  out=$(v1 "$M" chat/completions -D "$TMP/probe.h" -d "$(chat solo-model 'FAST probe' 2)")
  PREQ=$(grep -i '^x-ratelimit-remaining-requests:' "$TMP/probe.h" | tr -dc 0-9)
  echo "$(status_of "$out") $(grep -i '^x-ratelimit-remaining-tokens:' "$TMP/probe.h" | tr -dc 0-9)"
}
read -r s REM0 <<<"$(probe)"
expect_eq "metered key: first request" "$s" 200
check "...reports x-ratelimit-remaining-tokens (${REM0:-none})" test "${REM0:-0}" -gt 90000
# after_each WHAT: the next request is admitted (the single slot is free) and sees the
# limit minus what was charged (no reservation left behind)
after_each() {
  local used want
  used=$(charged)
  want="200 $((REM0 - used))"
  expect_eq "after $1: slot free, remaining = limit - charged ($used)" "$(probe)" "$want"
}

# the client leaves a plain request (it held the only slot meanwhile)
before=$(st "$PC" .cancelledPlain)
curl -s -m 60 -H "Authorization: Bearer $M" -d "$(chat solo-model 'a long answer' 300)" \
  "$GPUAAS_SERVER/v1/chat/completions" -o /dev/null &
LEFT=$!
check "a plain request of the metered key is in flight" within 10 is "st $PC .held" 1
out=$(v1 "$M" chat/completions -d "$(chat solo-model 'FAST probe' 2)")
expect_eq "...a second one meanwhile: 429 (maxConcurrentRequests: 1)" \
  "$(status_of "$out") $(body_of "$out" | jq -r .error.type)" "429 requests"
kill "$LEFT"; wait "$LEFT" 2>/dev/null
check "...its client leaves: cancelled upstream" within 5 is "st $PC '.cancelledPlain - $before'" 1
after_each "a client left a plain request"

# the client leaves a stream after a few chunks
before=$(st "$PC" .cancelled)
curl -s -N -m 60 -H "Authorization: Bearer $M" -d "$(chat solo-model 'SLOW stream' 100 ',"stream":true')" \
  "$GPUAAS_SERVER/v1/chat/completions" >"$TMP/mstream.out" 2>&1 &
LEFT=$!
check "a stream of the metered key sends chunks" within 10 is "grep -c '\"content\":\"tok' $TMP/mstream.out | awk '{print (\$1 >= 2)}'" 1
kill "$LEFT"; wait "$LEFT" 2>/dev/null
check "...its client leaves: cancelled upstream" within 5 is "st $PC '.cancelled - $before'" 1
after_each "a client left a stream"

# an upstream that answers 500 served nothing: nothing is charged, streamed or not
c0=$(charged)
out=$(v1 "$M" chat/completions -d "$(chat solo-model 'FAIL500 now' 50)")
expect_eq "upstream answers 500 (plain): passed on, nothing charged" "$(status_of "$out") $(($(charged) - c0))" "500 0"
after_each "an upstream 500 (plain)"

c0=$(charged)
out=$(v1 "$M" chat/completions -d "$(chat solo-model 'FAIL500 now' 50 ',"stream":true')")
expect_eq "upstream answers 500 (stream): passed on, nothing charged" "$(status_of "$out") $(($(charged) - c0))" "500 0"
after_each "an upstream 500 (stream)"

before=$(st "$PC" .cut) c0=$(charged)
out=$(v1 "$M" chat/completions -N -d "$(chat solo-model 'CUT FAST' 10 ',"stream":true')")
expect_eq "upstream closes mid-stream: the client is told" \
  "$(body_of "$out" | grep -c '"content":"tok') $(body_of "$out" | grep -c '"code":"upstream_error"')" "5 1"
check "...the 5 tokens it got are charged" test $(($(charged) - c0)) -ge 5
after_each "an upstream that closed mid-stream"

c0=$(charged)
out=$(v1 "$M" chat/completions -d "$(chat solo-model 'CUT FAST' 10)")
expect_eq "upstream closes mid-answer (plain): 502, nothing charged (the client got no answer)" \
  "$(status_of "$out") $(body_of "$out" | jq -r .error.type) $(($(charged) - c0))" "502 api_error 0"
expect_eq "...(the fake did cut both answers)" "$(st "$PC" ".cut - $before")" 2
after_each "an upstream that closed mid-answer (plain)"

# a replica that dies while in the rotation: its connection is refused before any byte
# (502, or 503 once the probe has seen it): neither the tokens nor the request count
start_fake d || fail "fake d starts"
PD=$(cat "$TMP/d.port") DPID=${FAKE_PIDS[-1]}
printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: frail}\nspec: {servedNames: [frail-model], tiers: [metered], url: "http://127.0.0.1:%s"}\n' \
  "$PD" >"$TMP/frail.yaml"
check "apply a model on a server about to die" "$G" apply -f "$TMP/frail.yaml"
check "...it becomes ready" within 20 is 'model frail .state' Ready
probe >/dev/null
r0=$PREQ c0=$(charged)
kill "$DPID"; wait "$DPID" 2>/dev/null
out=$(v1 "$M" chat/completions -d "$(chat frail-model 'hello' 50)")
check "its server dies: 502 or 503 upstream_unavailable ($(status_of "$out"))" \
  bash -c "[[ '$(status_of "$out") $(body_of "$out" | jq -r .error.code)' =~ ^(502|503)\ upstream_unavailable$ ]]"
c1=$(charged)
probe >/dev/null   # (in this shell: it sets PREQ)
expect_eq "...neither a request nor a token is charged for it" "$((r0 - PREQ)) $((c1 - c0))" "1 0"
after_each "a replica that refused the connection"
expect_eq "the gateway counts nothing in flight to solo" "$(model solo '.replicaStatus[0].outstanding')" 0

# ---- {share} in a workload command template ------------------------------------------------
cat >"$TMP/wl.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: shared}
spec:
  servedNames: [shared-model]
  tiers: [open]
  workload:
    namespace: team-a
    queue: main
    command: ["/bin/sh", "-c", "echo 'share={share} model={model} port={port}'; exec $FAKE_OPENAI --port {port} --model {model}"]
    resources: {cpu: "1", nvidia.com/gpu: 1}
YAML
check "apply a workload Model whose command uses {share}" "$G" apply -f "$TMP/wl.yaml"
check "its server starts and becomes Ready" within 30 is 'model shared .state' Ready
port=$(model shared '.replicaStatus[0].url' | sed 's/.*://')
expect_eq "{share}, {model} and {port} are substituted" "$(grep -h '^share=' "$TMP"/data/logs/team-a/maas-shared-0/pod-*.log 2>/dev/null | head -1)" "share=1 model=shared-model port=$port"
expect_eq "...and it serves" "$(status_of "$(v1 "$OPEN" chat/completions -d "$(chat shared-model 'FAST hi' 2)")")" 200
check "delete it" api DELETE /api/v1/models/shared
check "...its server stops (its Job is gone)" within 20 is 'status_of "$(api GET /api/v1/workloads/team-a/maas-shared-0)"' 404

# ---- usage by key and by namespace, and since= ---------------------------------------------
# fake c: prompt_tokens = words of the messages, completion_tokens = max_tokens
KA=$(newkey open team-a) KB=$(newkey open team-b) KC=$(newkey open team-a)
IA=$(cut -d_ -f2 <<<"$KA") IB=$(cut -d_ -f2 <<<"$KB") IC=$(cut -d_ -f2 <<<"$KC")
codes=""
for _ in 1 2; do codes+="$(status_of "$(v1 "$KA" chat/completions -d "$(chat solo-model 'FAST alpha beta' 3)")") "; done
s=$(v1 "$KB" chat/completions -N -d "$(chat solo-model 'FAST one two three four' 5 ',"stream":true')")
codes+="$(grep -c '^data: \[DONE\]' <<<"$s") "
codes+="$(status_of "$(v1 "$KC" chat/completions -d "$(chat solo-model 'FAST x' 1)")")"
expect_eq "usage requests answered" "$codes" "200 200 1 200"
sel() {  # the items of these groups, as "group requests prompt completion total"
  local q='[.items[] | select(.group == ($g | split(","))[]) | "\(.group) \(.requests) \(.promptTokens) \(.completionTokens) \(.totalTokens)"] | sort'
  api GET "/api/v1/usage?$1" | sed '$d' | jq -c --arg g "$2" "$q"
}
want=$(jq -cn --arg a "$IA" --arg b "$IB" --arg c "$IC" '["\($a) 2 6 6 12", "\($b) 1 5 5 10", "\($c) 1 2 1 3"] | sort')
expect_eq "usage group_by=key: each key's sums" "$(sel group_by=key "$IA,$IB,$IC")" "$want"
expect_eq "usage group_by=namespace: team-a and team-b" "$(sel group_by=namespace team-a,team-b)" \
  '["team-a 3 8 7 15","team-b 1 5 5 10"]'
# since: epoch ms after the requests above; only what follows counts
t=$(date +%s%3N)
while (( $(date +%s%3N) <= t )); do :; done   # the records above are at or before t
since=$((t + 1))
codes="$(status_of "$(v1 "$KA" chat/completions -d "$(chat solo-model 'FAST gamma' 4)")")"
codes+=" $(status_of "$(v1 "$KB" chat/completions -d "$(chat solo-model 'FAST delta' 1)")")"
expect_eq "more requests" "$codes" "200 200"
expect_eq "usage since=<epoch ms>: only the later requests" "$(sel "group_by=namespace&since=$since" team-a,team-b)" \
  '["team-a 1 2 4 6","team-b 1 2 1 3"]'
expect_eq "usage since=1h: all of them" "$(sel 'group_by=namespace&since=1h' team-a,team-b)" \
  '["team-a 4 10 11 21","team-b 2 7 6 13"]'
expect_eq "usage group_by=key&since=<epoch ms>" "$(sel "group_by=key&since=$since" "$IA,$IB,$IC")" \
  "$(jq -cn --arg a "$IA" --arg b "$IB" '["\($a) 1 2 4 6", "\($b) 1 2 1 3"] | sort')"
expect_eq "usage since=junk: 400 naming the field" "$(status_of "$(api GET '/api/v1/usage?since=yesterday')")" 400

check "no request is left in flight in the gateway" \
  within 5 is "curl -s $GPUAAS_SERVER/metrics | awk '\$1 == \"gpuaas_gateway_requests_in_flight\" {print \$2}'" 0
kill "${FAKE_PIDS[@]}" 2>/dev/null
finish
