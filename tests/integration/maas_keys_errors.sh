#!/usr/bin/env bash
# The gateway's API-key caps and the CLI around them, against the real daemon and a real
# upstream over loopback (build/fake-openai stands in for vLLM; no GPU or model here).
#   - caps count only active keys: a revoked or expired key frees its slot, server-wide
#     and per user, and each refusal is a 422 naming the cap and what to do;
#   - memory holds every active key and only the ended keys that ended last: older ones
#     are forgotten (still refused, still in SQLite and in usage records), also at restart;
#   - gpuaas get tiers / get models work (keys create without --tier points there), and
#     gpuaas usage --user shows one user's usage.
# The caps are lowered with GPUAAS_GATEWAY_KEY_CAPS=ACTIVE,PER_USER,ENDED_HELD so that a
# few keys reach them; the code paths are those of the defaults (100000, 100, 10000).
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
start_fake up --tokens 4 --token-ms 1 || { fail "fake model server start"; finish; exit 1; }
UP=$(cat "$TMP/up.port")

export GPUAAS_GATEWAY_KEY_CAPS=6,3,2
cfg=$(write_config keys "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

cat >"$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: free}
spec:
  limits: {requestsPerMinute: 60, tokensPerMinute: 100000}
  maxKeyLifetime: 30d
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: fake}
spec: {servedNames: [fake-model], tiers: [free], url: "http://127.0.0.1:$UP/v1"}
YAML
check "apply a Tier and a Model" "$G" apply -f "$TMP/models.yaml"
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/fake | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
ALICE=$("$G" users create alice --namespaces team-a -o json | jq -r .token)
BOB=$("$G" users create bob --namespaces team-b -o json | jq -r .token)

# newkey TOKEN NAME [EXPIRES]: "STATUS KEY-or-message"
newkey() {
  local body out
  body=$(jq -cn --arg n "$2" --arg e "${3:-}" '{name: $n, tier: "free"} + (if $e == "" then {} else {expires: $e} end)')
  out=$(TOKEN=$1 api POST /api/v1/keys -d "$body")
  echo "$(status_of "$out") $(body_of "$out" | jq -r '.key // .error.message')"
}
idof() { cut -d_ -f2 <<<"$1"; }
revoke() { status_of "$(TOKEN=$1 api DELETE "/api/v1/keys/$(idof "$2")")"; }
v1() { curl -s -H "Authorization: Bearer $1" -w '\n%{http_code}' "${@:3}" "$GPUAAS_SERVER/v1/$2"; }
chat() { v1 "$1" chat/completions -H 'Content-Type: application/json' -d '{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'; }

# ---- the per-user cap counts active keys only -------------------------------------------
A1=$(newkey "$ALICE" a1); A2=$(newkey "$ALICE" a2); A3=$(newkey "$ALICE" a3)
expect_match "alice creates three keys" "$A1 $A2 $A3" '^201 gpa_\S+ 201 gpa_\S+ 201 gpa_\S+$'
A1=${A1#201 } A2=${A2#201 } A3=${A3#201 }
out=$(newkey "$ALICE" a4)
expect_match "a fourth is refused with 422 (per-user cap 3)" "$out" '^422 '
expect_match "...naming the cap and what to do" "$out" 'user alice already has 3 active API keys, the most one user may have; revoke one first \(gpuaas keys ls'
expect_eq "a1 serves a request" "$(status_of "$(chat "$A1")")" 200
expect_eq "alice revokes a1" "$(revoke "$ALICE" "$A1")" 200
out=$(newkey "$ALICE" a4)
expect_match "a revoked key does not count: a4 is created" "$out" '^201 gpa_'
A4=${out#201 }
expect_eq "alice revokes a2" "$(revoke "$ALICE" "$A2")" 200
out=$(newkey "$ALICE" a5 1s)
expect_match "a5, expiring in 1s, is created" "$out" '^201 gpa_'
A5=${out#201 }
expect_match "a sixth while a5 lives is refused" "$(newkey "$ALICE" a6)" '^422 user alice already has 3 active'
for _ in $(seq 1 40); do [[ $(status_of "$(v1 "$A5" models)") == 401 ]] && break; sleep 0.1; done
expect_eq "a5 has expired" "$(v1 "$A5" models | sed '$d' | jq -r .error.message)" "this API key has expired"
out=$(newkey "$ALICE" a6)
expect_match "an expired key does not count: a6 is created" "$out" '^201 gpa_'
A6=${out#201 }

# ---- the server-wide cap counts active keys only ----------------------------------------
B1=$(newkey "$BOB" b1); B2=$(newkey "$BOB" b2); B3=$(newkey "$BOB" b3)
expect_match "bob creates three keys (six active on the server)" "$B1 $B2 $B3" '^201 gpa_\S+ 201 gpa_\S+ 201 gpa_\S+$'
B1=${B1#201 } B2=${B2#201 } B3=${B3#201 }
expect_eq "b2 serves a request" "$(status_of "$(chat "$B2")")" 200
out=$(newkey "$ADMIN_TOKEN" adm)
expect_match "the admin's first key is refused: the server is at 6 active keys" "$out" \
  '^422 the server holds 6 active API keys, its limit; revoked and expired keys do not count'
expect_eq "bob revokes b1" "$(revoke "$BOB" "$B1")" 200
out=$(newkey "$ADMIN_TOKEN" adm)
expect_match "then the admin's key is created" "$out" '^201 gpa_'

# ---- ended keys beyond the newest 2 are forgotten from memory, not from SQLite ----------
# ended, oldest first: a1 (revoked), a2 (revoked), a5 (expired), b1 (revoked); the last
# two creations forgot a1 and then a2
ls_ids() { "$G" keys ls --all -o json | jq -r '[.items[].id] | sort | join(",")'; }
want=$(for k in "$A3" "$A4" "$A5" "$A6" "$B1" "$B2" "$B3"; do idof "$k"; done; "$G" keys ls -o json | jq -r '.items[].id')
want=$(sort <<<"$want" | paste -sd,)
expect_eq "keys ls --all: the 6 active keys and the 2 that ended last" "$(ls_ids)" "$want"
expect_eq "a forgotten key is still refused" "$(v1 "$A1" models | tail -n1) $(v1 "$A1" models | sed '$d' | jq -r .error.message)" \
  "401 invalid API key"
expect_eq "a held revoked key says so" "$(v1 "$B1" models | sed '$d' | jq -r .error.message)" "this API key has been revoked"
expect_eq "its GET is 404" "$(status_of "$(TOKEN=$ALICE api GET "/api/v1/keys/$(idof "$A1")")")" 404
expect_eq "SQLite keeps every key" "$(sqlite3 "$TMP/data/gpuaas.db" 'select count(*) from api_keys')" 10
u=$(api GET '/api/v1/usage?group_by=key&since=1h' | sed '$d')
expect_eq "usage still names the forgotten key" "$(jq -r --arg id "$(idof "$A1")" '.items[] | select(.group == $id) | .requests' <<<"$u")" 1

stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "after a restart: the same keys are loaded (old ended ones stay in SQLite)" "$(ls_ids)" "$want"
expect_eq "an active key works after the restart" "$(status_of "$(v1 "$A3" models)")" 200

# ---- the CLI: tiers, models, usage --user -------------------------------------------------
"$G" keys create nope >"$TMP/out" 2>"$TMP/err"
expect_eq "keys create without --tier exits 2" "$?" 2
expect_match "...and points at gpuaas get tiers" "$(cat "$TMP/err")" 'gpuaas get tiers lists them'
out=$("$G" get tiers 2>&1)
expect_eq "gpuaas get tiers works" "$?" 0
expect_match "...listing the tier with its windows and key lifetime" "$(grep '^free ' <<<"$out" | tr -s ' ')" \
  '^free 60/1m 100000/1m - 30d [0-9]+$'
expect_eq "gpuaas get tier free -o json is the tier" "$("$G" get tier free -o json | jq -r '.name, .limits.requests[0].limit' | paste -sd' ')" "free 60"
expect_eq "gpuaas get tier nope fails" "$("$G" get tier nope >/dev/null 2>&1; echo $?)" 1
expect_match "gpuaas get models lists the model" "$("$G" get models | grep '^fake ' | tr -s ' ')" '^fake fake-model free url Ready 1 1$'
expect_eq "admin: usage by user shows both" "$("$G" usage --group-by user -o json | jq -r '[.items[].group] | sort | join(",")')" "alice,bob"
expect_eq "admin: usage --user bob shows bob's alone" "$("$G" usage --group-by user --user bob -o json | jq -r '[.items[].group] | join(",")')" "bob"
expect_eq "usage --user by key: bob's key only" "$("$G" usage --user bob -o json | jq -r '[.items[].group] | join(",")')" "$(idof "$B2")"
expect_eq "usage --user with a name too long is a usage error" \
  "$("$G" usage --user "$(head -c 64 /dev/zero | tr '\0' a)" >/dev/null 2>&1; echo $?)" 2
expect_eq "a user asking for another user's usage gets 403" \
  "$(status_of "$(TOKEN=$ALICE api GET '/api/v1/usage?user=bob')")" 403
expect_eq "...and their own with user= set to themself" \
  "$(status_of "$(TOKEN=$ALICE api GET '/api/v1/usage?user=alice')")" 200

# ---- a user lists the tiers open to them; the view shows shared limits too ---------------
cat >"$TMP/tiers.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: team-b-only}
spec:
  namespaces: [team-b]
  limits: {requestsPerMinute: 10}
  sharedLimits: {tokensPerDay: 5000}
YAML
check "apply a Tier open to team-b only" "$G" apply -f "$TMP/tiers.yaml"
tiers_of() { TOKEN=$1 api GET /api/v1/tiers | sed '$d' | jq -r '[.items[].name] | sort | join(",")'; }
expect_eq "alice (team-a) sees only free" "$(tiers_of "$ALICE")" "free"
expect_eq "bob (team-b) sees both" "$(tiers_of "$BOB")" "free,team-b-only"
expect_eq "the admin sees both" "$(tiers_of "$GPUAAS_TOKEN")" "free,team-b-only"
expect_eq "GET of a tier not open to alice is 404" "$(status_of "$(TOKEN=$ALICE api GET /api/v1/tiers/team-b-only)")" 404
expect_eq "the tier's view carries its sharedLimits" \
  "$(TOKEN=$BOB api GET /api/v1/tiers/team-b-only | sed '$d' | jq -c '.sharedLimits.tokens')" '[{"limit":5000,"windowSeconds":86400}]'

check "daemon still running" kill -0 "$DAEMON_PID"
finish
