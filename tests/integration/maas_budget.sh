#!/usr/bin/env bash
# A gateway token budget is never overshot, whatever the prompt (issue 16): 100 clients
# race one tier's small daily budget with a 120-word prompt and max_tokens 5, a third of
# them streaming, against two model servers whose prompt counts exceed every estimate
# the gateway could make from a guess of bytes per token:
#  - "bytes": an honest tokenizer at its worst, one token per byte of text plus ChatML's
#    special tokens; the gateway's reservation (the prompt's bound, docs/gateway.md
#    "Limits") must hold it without ever cutting a charge;
#  - "liar": reports twice the whole body's bytes, past any bound; the gateway must
#    charge at most what it reserved, and count what it cut in /metrics.
# charged/limit is read from the usage API and from /metrics (authorized_hits), printed,
# and must be <= 100 %. Also: a streamed request whose stream_options is not an object is
# a 400 naming stream_options (it was a 500), and /api/v1/models lists a user only the
# models their tiers may use.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
start_fake bytes --byte-tokenizer --token-ms 1 && start_fake liar --prompt-tokens-per-byte 2 --token-ms 1 ||
  { fail "fake model servers start"; finish; exit 1; }
PB=$(cat "$TMP/bytes.port") PL=$(cat "$TMP/liar.port")
cfg=$(write_config bg "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

LIMIT=5000
cat >"$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: honest}
spec: {sharedLimits: {tokensPerDay: $LIMIT}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: lied}
spec: {sharedLimits: {tokensPerDay: $LIMIT}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: roomy}
spec: {limits: {tokensPerDay: 1000000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: team-b-only}
spec: {namespaces: [team-b]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: bytes}
spec: {servedNames: [bytes-model], tiers: [honest, roomy], url: "http://127.0.0.1:$PB"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: hidden}
spec: {servedNames: [hidden-model], tiers: [team-b-only], url: "http://127.0.0.1:$PB"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: liar}
spec: {servedNames: [liar-model], tiers: [lied], url: "http://127.0.0.1:$PL"}
YAML
check "apply Tiers and Models" "$G" apply -f "$TMP/models.yaml"
for _ in $(seq 1 100); do
  [[ $(api GET /api/v1/models/bytes | sed '$d' | jq -r .state) == Ready &&
     $(api GET /api/v1/models/liar | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
expect_eq "both model servers Ready" \
  "$(api GET /api/v1/models/bytes | sed '$d' | jq -r .state) $(api GET /api/v1/models/liar | sed '$d' | jq -r .state)" "Ready Ready"
newkey() { api POST /api/v1/keys -d "{\"name\":\"$1\",\"tier\":\"$1\"}" | sed '$d' | jq -r .key; }
HONEST=$(newkey honest) LIED=$(newkey lied) ROOMY=$(newkey roomy)

# a streamed request whose stream_options is not an object: 400 naming it (it was a 500)
for so in 5 '"x"' '[]' true; do
  out=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $ROOMY" \
    -d "{\"model\":\"bytes-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":1,\"stream\":true,\"stream_options\":$so}" \
    "$GPUAAS_SERVER/v1/chat/completions")
  expect_eq "stream_options $so: 400 invalid_request_error naming stream_options" \
    "$(status_of "$out") $(body_of "$out" | jq -r '.error.type + " " + .error.param')" "400 invalid_request_error stream_options"
done
out=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $ROOMY" \
  -d '{"model":"bytes-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stream":true,"stream_options":null}' \
  "$GPUAAS_SERVER/v1/chat/completions")
expect_eq "stream_options null: streamed as usual" "$(status_of "$out") $(grep -c '^data: \[DONE\]' <<<"$out")" "200 1"

# /api/v1/models: a user sees the models of the tiers open to them, an admin every one
DORA=$("$G" users create dora --namespaces team-a -o json | jq -r .token)
expect_eq "/api/v1/models for a user of team-a: not the model only team-b's tier may use" \
  "$(TOKEN=$DORA api GET /api/v1/models | sed '$d' | jq -r '[.items[].name] | sort | join(",")')" "bytes,liar"
expect_eq "...nor by its name" "$(status_of "$(TOKEN=$DORA api GET /api/v1/models/hidden)")" 404
expect_eq "an admin sees every model" "$(api GET /api/v1/models | sed '$d' | jq -r '[.items[].name] | sort | join(",")')" \
  "bytes,hidden,liar"

metrics() { curl -s -m 5 -H "Authorization: Bearer $ADMIN_TOKEN" "$GPUAAS_SERVER/metrics"; }   # per-user series need an admin token
# hits TIER: tokens charged to a tier, summed over its authorized_hits series
hits() { metrics | awk -v t="tier=\"$1\"" '$1 ~ /^authorized_hits\{/ && index($1, t) {s += $2} END {print s + 0}'; }
over() { metrics | awk '$1=="gpuaas_gateway_requests_over_reservation_total"{print $2}'; }
charged() { api GET '/api/v1/usage?group_by=tier' | sed '$d' | jq --arg t "$1" '[.items[] | select(.group==$t) | .totalTokens] | add // 0'; }

# 120 words of ordinary text (about 830 bytes): bytes/3 + 4 reserves ~280 tokens for it
PROMPT=$(for i in $(seq 1 120); do printf 'word%03d ' "$i"; done)
# race MODEL KEY NAME: 100 clients at once, every third streaming; prints "admitted refused"
race() {
  local model=$1 key=$2 name=$3 i
  mkdir -p "$TMP/$name"
  for i in $(seq 1 100); do
    local extra=''
    ((i % 3 == 0)) && extra=',"stream":true'
    curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $key" \
      -d "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"$i $PROMPT\"}],\"max_tokens\":5$extra}" \
      "$GPUAAS_SERVER/v1/chat/completions" >"$TMP/$name/$i" 2>/dev/null &
  done
  wait
  echo "$(cat "$TMP/$name"/* | grep -c '^200$') $(cat "$TMP/$name"/* | grep -c '^429$')"
}
# settled RECORDS TIER: waits (bounded) until the usage API holds every admitted request
settled() {
  for _ in $(seq 1 100); do
    [[ $(api GET '/api/v1/usage?group_by=tier' | sed '$d' | jq --arg t "$2" '[.items[] | select(.group==$t) | .requests] | add // 0') -ge 100 ]] && return 0
    sleep 0.1
  done
  return 1
}
# judge TIER ADMITTED REFUSED: charged/limit from both sources, <= 100 %
judge() {
  local t=$1 ok=$2 no=$3
  expect_eq "$t: every client answered (200 or 429)" "$((ok + no))" 100
  check "$t: some admitted ($ok), some refused ($no)" test "$ok" -gt 0 -a "$no" -gt 0
  check "$t: every request is in the usage records" settled 100 "$t"
  local u h
  u=$(charged "$t") h=$(hits "$t")
  echo "  $t: $ok admitted, $no refused; charged $u of $LIMIT ($((u * 100 / LIMIT)) %) by the usage API, $h by /metrics"
  check "$t: charged/limit by the usage API is <= 100 % ($u of $LIMIT)" test "${u:-99999}" -le "$LIMIT"
  check "$t: charged/limit by /metrics authorized_hits is <= 100 % ($h of $LIMIT)" test "${h:-99999}" -le "$LIMIT"
  expect_eq "$t: the usage API and /metrics agree" "$u" "$h"
}

read -r ok no <<<"$(race bytes-model "$HONEST" honest)"
judge honest "$ok" "$no"
expect_eq "honest: the prompt's bound held, no charge was cut" "$(over)" 0
best=$(sqlite3 "$TMP/data/gpuaas.db" "select max(prompt_tokens) from usage where tier='honest' and status = 200")
check "honest: the upstream counted more prompt tokens ($best) than bytes/3 + 4 would reserve" test "${best:-0}" -gt 280

read -r ok no <<<"$(race liar-model "$LIED" lied)"
judge lied "$ok" "$no"
o=$(over)
check "lied: the charges past the reservation were cut and counted ($o requests)" test "${o:-0}" -ge "$ok"

finish
