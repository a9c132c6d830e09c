#!/usr/bin/env bash
# The OpenAI-compatible gateway (docs/gateway.md) against the real daemon and a real
# upstream over loopback: build/fake-openai stands in for vLLM (no GPU or model here).
# Covers keys (format, hashed, revoke on the next request, survive a restart), /v1/models
# by tier (never limited), plain and streamed answers passed through, usage asked for
# and hidden, usage from the last chunk, estimates, every error in OpenAI's envelope
# (401 403 404 413 400 5xx), 429 with x-ratelimit-* and retry-after, a Tier's userLimits
# (one budget for all the keys of a user, another user unaffected), retry on another
# replica, a pooled connection closed by the server retried unseen, 503 upstream_unavailable,
# cancellation of the upstream when the client leaves, back-pressure, usage records and
# /metrics (one gateway call counts one HTTP request), and 200 clients racing one tier's
# token budget. Token grants: the upstream is told the completion limit that was
# reserved (a server that runs to its context length without max_tokens never
# overshoots a budget), a small tier admits requests that name no max_tokens,
# x-ratelimit-* shows the tier's shared budget too, a request that can never fit says
# x-should-retry: false, and a client that leaves gives its tokens back.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
echo "s3cret-upstream-key" >"$TMP/upstream.key"
# up: the plain one; locked: wants an API key; drop: closes a kept-alive connection instead
# of answering its next request; long: writes 500 tokens when not told max_tokens (as vLLM
# runs to its context length)
start_fake up --tokens 8 --token-ms 5 && start_fake locked --api-key s3cret-upstream-key &&
  start_fake drop --drop-reused --token-ms 1 && start_fake long --tokens 500 --token-ms 1 ||
  { fail "fake model servers start"; finish; exit 1; }
UP=$(cat "$TMP/up.port") LOCKED=$(cat "$TMP/locked.port") DROP=$(cat "$TMP/drop.port") LONG=$(cat "$TMP/long.port")
DEAD=$((UP == 65535 ? UP - 1 : UP + 1))   # nothing listens there (checked below)
curl -s -m 1 "http://127.0.0.1:$DEAD/" >/dev/null 2>&1 && DEAD=9   # discard port: refused
stats() { curl -s "http://127.0.0.1:$UP/stats" | jq -r "$1"; }

export GPUAAS_GATEWAY_HEARTBEAT_MS=100   # so that the test sees heartbeats on a slow stream
cfg=$(write_config gw "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

cat >"$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: free}
spec:
  limits: {requestsPerMinute: 3, tokensPerMinute: 100000}
  maxKeyLifetime: 30d
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: gold}
spec:
  limits: {requestsPerMinute: 100000, tokensPerMinute: 10000000, tokensPerDay: 100000000, maxConcurrentRequests: 500}
  maxTokensPerRequest: 100000
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: tight}
spec:
  sharedLimits: {tokensPerDay: 2000}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: daily}
spec: {limits: {tokensPerDay: 100}, maxTokensPerRequest: 5}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: small}
spec: {limits: {tokensPerMinute: 100}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: mixed}
spec: {limits: {tokensPerMinute: 100000}, sharedLimits: {tokensPerDay: 30}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: meter}
spec: {limits: {tokensPerDay: 5000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: long}
spec: {servedNames: [long-model], tiers: [daily, small, mixed, meter], url: "http://127.0.0.1:$LONG"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: fake}
spec:
  servedNames: [fake-model, fake-alias]
  tiers: [free, gold, tight]
  url: http://127.0.0.1:$UP/v1
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: private}
spec: {servedNames: [private-model], tiers: [gold], url: "http://127.0.0.1:$UP", maxBodyBytes: 2048}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: two}
spec: {servedNames: [two-model], tiers: [gold], urls: ["http://127.0.0.1:$DEAD", "http://127.0.0.1:$UP"]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: locked}
spec: {servedNames: [locked-model], tiers: [gold], url: "http://127.0.0.1:$LOCKED", apiKeyFile: "$TMP/upstream.key"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: dropper}
spec: {servedNames: [drop-model], tiers: [gold], url: "http://127.0.0.1:$DROP"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: cold}
spec: {servedNames: [cold-model], tiers: [gold], url: "http://127.0.0.1:$DEAD"}
YAML
check "apply Tiers and Models" "$G" apply -f "$TMP/models.yaml"
bad=$(printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: typo}\nspec: {tiers: [glod], url: "http://x"}\n')
out=$(api POST /api/v1/apply --data-binary "$bad")
expect_eq "a Model naming an unknown tier is refused" "$(status_of "$out")" 422
expect_match "...saying which" "$(body_of "$out")" 'unknown Tier glod'

# readiness: the probe finds the live servers
for _ in $(seq 1 100); do
  [[ $(api GET /api/v1/models/fake | sed '$d' | jq -r .state) == Ready && \
     $(api GET /api/v1/models/two | sed '$d' | jq -r .readyReplicas) == 1 ]] && break; sleep 0.1; done
expect_eq "url model becomes Ready" "$(api GET /api/v1/models/fake | sed '$d' | jq -r .state)" Ready
expect_eq "gpuaas models lists it" "$("$G" models | awk '$1=="fake"{print $5}')" Ready

FREE=$("$G" keys create laptop --tier free 2>/dev/null | awk '/^key:/{print $2}')
GOLD=$(api POST /api/v1/keys -d '{"name":"ci","tier":"gold","expires":"1d"}' | sed '$d' | jq -r .key)
TIGHT=$(api POST /api/v1/keys -d '{"name":"race","tier":"tight"}' | sed '$d' | jq -r .key)
expect_match "key format gpa_<id>_<secret>" "$FREE" '^gpa_[0-9a-f]{12}_[A-Za-z0-9]{32}$'
check "the key is not stored in clear" bash -c "! grep -qa '${GOLD##*_}' $TMP/data/gpuaas.db*"
expect_eq "a key longer than the tier allows is refused" \
  "$(status_of "$(api POST /api/v1/keys -d '{"name":"x","tier":"free","expires":"90d"}')")" 422
expect_eq "keys ls shows them" "$("$G" keys ls -o json | jq '.items | length')" 3
newkey() { api POST /api/v1/keys -d "{\"name\":\"$1\",\"tier\":\"$1\"}" | sed '$d' | jq -r .key; }
DAILY=$(newkey daily); SMALL=$(newkey small); MIXED=$(newkey mixed); METER=$(newkey meter)


v1() {  # v1 KEY PATH [curl args]: body then status
  local k=$1 p=$2; shift 2
  curl -s -H "Authorization: Bearer $k" -H 'Content-Type: application/json' -w '\n%{http_code}' "$@" "$GPUAAS_SERVER/v1/$p"
}
chat() { printf '{"model":"%s","messages":[{"role":"user","content":"%s"}],"max_tokens":%s%s}' "$1" "$2" "${3:-4}" "${4:-}"; }

out=$(v1 "$GOLD" models)
expect_eq "/v1/models for gold" "$(body_of "$out" | jq -r '[.data[].id] | sort | join(",")')" "cold-model,drop-model,fake-alias,fake-model,locked-model,private-model,two-model"
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/locked | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
out=$(v1 "$GOLD" chat/completions -d "$(chat locked-model 'hi' 2)")
expect_eq "an upstream that needs its own API key (spec.apiKeyFile)" "$(status_of "$out")" 200
check "...the upstream's key is not in the database" bash -c "! grep -qa s3cret-upstream-key $TMP/data/gpuaas.db*"
SHORT=$(api POST /api/v1/keys -d '{"name":"short","tier":"gold","expires":"1500ms"}' | sed '$d' | jq -r .key)
expect_eq "a key works until it expires" "$(status_of "$(v1 "$SHORT" models)")" 200
check "...and is refused from the next request after (bounded poll)" bash -c "for i in \$(seq 1 50); do
  [[ \$(curl -s -H 'Authorization: Bearer $SHORT' $GPUAAS_SERVER/v1/models | jq -r .error.message) == 'this API key has expired' ]] && exit 0; sleep 0.1; done; exit 1"
expect_eq "/v1/models for free (tier filter)" "$(v1 "$FREE" models | sed '$d' | jq -r '[.data[].id] | sort | join(",")')" "fake-alias,fake-model"

hdr=$TMP/h.txt
out=$(v1 "$GOLD" chat/completions -D "$hdr" -d "$(chat fake-model 'hello there' 5)")
expect_eq "plain chat completion" "$(status_of "$out")" 200
expect_eq "...body passed through" "$(body_of "$out" | jq -r '.choices[0].message.content')" "tok0 tok1 tok2 tok3 tok4 "
expect_eq "...usage passed through" "$(body_of "$out" | jq -c .usage)" '{"prompt_tokens":2,"completion_tokens":5,"total_tokens":7}'
# the router is entered once per request: a gateway call (deferred, then completed when
# the upstream answers) moves gpuaas_http_requests_total by one; the second read of
# /metrics counts itself too
reqs() { curl -s "$GPUAAS_SERVER/metrics" | awk '$1=="gpuaas_http_requests_total"{print $2}'; }
r0=$(reqs); v1 "$GOLD" chat/completions -d "$(chat fake-model hi 2)" >/dev/null; r1=$(reqs)
expect_eq "one plain gateway call counts one HTTP request" "$((r1 - r0 - 1))" 1
r0=$(reqs); v1 "$GOLD" chat/completions -d "$(chat fake-model hi 2 ',"stream":true')" >/dev/null; r1=$(reqs)
expect_eq "one streamed gateway call counts one HTTP request" "$((r1 - r0 - 1))" 1
check "...x-ratelimit headers on success" grep -qi '^x-ratelimit-remaining-tokens: [0-9]' "$hdr"
out=$(v1 "$GOLD" completions -d '{"model":"fake-alias","prompt":"say it","max_tokens":2}')
expect_eq "completions by alias" "$(body_of "$out" | jq -r '.choices[0].text')" "tok0 tok1 "
out=$(v1 "$GOLD" embeddings -d '{"model":"fake-model","input":"one two three"}')
expect_eq "embeddings" "$(body_of "$out" | jq -r '.usage.prompt_tokens')" 3

s=$(v1 "$GOLD" chat/completions -N -d "$(chat fake-model 'stream me' 3 ',"stream":true')")
expect_eq "stream ends with [DONE]" "$(grep -c '^data: \[DONE\]' <<<"$s")" 1
expect_eq "...3 content chunks" "$(grep -c '"content":"tok' <<<"$s")" 3
expect_eq "...usage was asked of the upstream" "$(stats .lastIncludeUsage)" 1
expect_eq "...but not shown to a client that did not ask" "$(grep -c '"usage":{' <<<"$s")" 0
s=$(v1 "$GOLD" chat/completions -N -d "$(chat fake-model 'stream me' 3 ',"stream":true,"stream_options":{"include_usage":true}')")
expect_eq "stream with include_usage gets the usage chunk" "$(grep '"choices":\[\]' <<<"$s" | grep -c '"completion_tokens":3')" 1
s=$(v1 "$GOLD" chat/completions -N -d "$(chat fake-model 'stream me' 3 ',"stream":true,"stream_options":{"include_usage":false}')")
expect_eq "stream_options without include_usage: usage asked of the upstream" "$(stats .lastIncludeUsage)" 1
expect_eq "...not shown to the client, and every chunk delivered" "$(grep -c '"usage":{' <<<"$s") $(grep -c '"content":"tok' <<<"$s")" "0 3"
s=$(v1 "$GOLD" chat/completions -N -d "$(chat fake-model 'USAGEINLAST here' 4 ',"stream":true')")
expect_eq "usage riding on the last content chunk is hidden" "$(grep -c '"usage":{' <<<"$s")" 0
expect_eq "...and that chunk still delivered" "$(grep -c '"content":"tok3 "' <<<"$s")" 1
s=$(v1 "$GOLD" chat/completions -N -d "$(chat fake-model 'WAIT for the first token' 3 ',"stream":true')")
check "a stream idle during a long prefill gets SSE heartbeats" grep -q '^: keep-alive' <<<"$s"
expect_eq "...then all its chunks" "$(grep -c '"content":"tok' <<<"$s")" 3
# back-pressure: a reader that stops for a second during a fast stream (~11 MB: more than
# the socket buffers, whose autotuning reaches several MiB on loopback, plus the 256 KiB the
# gateway holds before pausing the upstream) still gets every chunk, in order
s=$(curl -s -N -H "Authorization: Bearer $GOLD" -d "$(chat fake-model 'FAST flood' 60000 ',"stream":true')" \
    "$GPUAAS_SERVER/v1/chat/completions" | { sleep 1; cat; })
expect_eq "a slow reader gets every chunk of a fast stream" "$(grep -c '"content":"tok' <<<"$s") $(grep -c '"content":"tok59999 "' <<<"$s") $(tail -c 20 <<<"$s" | grep -c DONE)" "60000 1 1"
check "...because the upstream was paused meanwhile" bash -c "curl -s $GPUAAS_SERVER/metrics | grep -q '^gpuaas_gateway_upstream_pauses_total [1-9]'"
s=$(v1 "$GOLD" chat/completions -N -d "$(chat private-model 'NOUSAGE please' 4 ',"stream":true')")
expect_eq "a stream without usage completes" "$(grep -c '^data: \[DONE\]' <<<"$s")" 1

# errors, all in OpenAI's envelope
out=$(v1 gpa_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA chat/completions -d "$(chat fake-model hi)")
expect_eq "bad key 401" "$(status_of "$out")" 401
expect_eq "...envelope" "$(body_of "$out" | jq -r '[.error.type,.error.code,(.error|has("param"))]|join(",")')" "invalid_request_error,invalid_api_key,true"
out=$(v1 "$GOLD" chat/completions -d "$(chat nope hi)")
expect_eq "unknown model 404 model_not_found" "$(status_of "$out") $(body_of "$out" | jq -r .error.code)" "404 model_not_found"
out=$(v1 "$FREE" chat/completions -d "$(chat private-model hi)")
expect_eq "model not in tier 403" "$(status_of "$out")" 403
big=$(head -c 3000 /dev/zero | tr '\0' a)
out=$(v1 "$GOLD" chat/completions -d "$(chat private-model "$big")")
expect_eq "body over the model's limit 413" "$(status_of "$out") $(body_of "$out" | jq -r .error.type)" "413 invalid_request_error"
out=$(v1 "$GOLD" chat/completions -d '{"messages":[]}')
expect_eq "no model 400" "$(status_of "$out")" 400
out=$(v1 "$GOLD" chat/completions -d '{"model":"fake-model","messages":[],}')
expect_eq "invalid JSON 400, in jansson's words" "$(status_of "$out") $(body_of "$out" | jq -r .error.message)" \
  "400 the body must be a JSON object (string or '}' expected near '}')"
out=$(v1 "$GOLD" chat/completions -d '{"model":"fake-model","model":"private-model","messages":[]}')
expect_eq "a duplicate key 400 (routing and upstream could read different models)" "$(status_of "$out")" 400
out=$(v1 "$GOLD" chat/completions -d '{"model":"fake\u002dmodel","messages":[{"role":"user","content":"caf\u00e9 \u4e2d"}],"max_tokens":2}')
expect_eq "an escaped model name is unescaped before routing" "$(status_of "$out")" 200
out=$(v1 "$GOLD" chat/completions -d "$(chat fake-model 'café 中文 😀' 2)")
expect_eq "UTF-8 text passes" "$(status_of "$out")" 200
out=$(v1 "$GOLD" chat/completions -d "$(chat fake-model 'FAIL500 now')")
expect_eq "upstream 500 passed on" "$(status_of "$out")" 500
expect_eq "...in OpenAI's envelope (vLLM's old format wrapped)" "$(body_of "$out" | jq -r .error.message)" "fake failure"
out=$(v1 "$GOLD" chat/completions -d "$(chat cold-model hi)")
expect_eq "a url model whose server is down: 503 upstream_unavailable" "$(status_of "$out") $(body_of "$out" | jq -r .error.code)" \
  "503 upstream_unavailable"
expect_match "...saying so, never that it is starting" "$(body_of "$out" | jq -r .error.message)" \
  "^model cold: upstream http://127.0.0.1:$DEAD (is unavailable \\(.+\\)|has not answered its readiness probe yet)$"
codes=""; for _ in 1 2 3 4; do codes+="$(status_of "$(v1 "$GOLD" chat/completions -d "$(chat two-model hi)")") "; done
expect_eq "retry on the other replica when one refuses connections" "$codes" "200 200 200 200 "
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/dropper | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
codes=""; for _ in 1 2 3 4; do codes+="$(status_of "$(v1 "$GOLD" chat/completions -d "$(chat drop-model hi)")") "; done
s=$(v1 "$GOLD" chat/completions -N -d "$(chat drop-model 'stream me' 3 ',"stream":true')")
codes+="$(grep -c '"content":"tok' <<<"$s")"
expect_eq "a pooled connection the server closed is retried on a fresh one, unseen by the client" "$codes" "200 200 200 200 3"
dropped=$(curl -s "http://127.0.0.1:$DROP/stats" | jq -r .dropped)
check "...(the server did drop reused connections: $dropped)" test "${dropped:-0}" -ge 3

# 429: free allows 3 requests a minute
for _ in 1 2 3; do v1 "$FREE" chat/completions -d "$(chat fake-model hi)" >/dev/null; done
out=$(v1 "$FREE" chat/completions -D "$hdr" -d "$(chat fake-model hi)")
expect_eq "4th request in a minute: 429" "$(status_of "$out")" 429
expect_eq "...type requests, code rate_limit_exceeded" "$(body_of "$out" | jq -r '.error.type+" "+.error.code')" "requests rate_limit_exceeded"
check "...retry-after" grep -qi '^retry-after: [0-9]' "$hdr"
check "...x-ratelimit-remaining-requests: 0" grep -qi '^x-ratelimit-remaining-requests: 0' "$hdr"
check "...x-ratelimit-reset-requests" grep -qi '^x-ratelimit-reset-requests: [0-9]' "$hdr"
expect_eq "/v1/models is never limited" "$(status_of "$(v1 "$FREE" models)")" 200
# a refusal leaves a usage record too (no tokens), so usage shows who is throttled
out=$(v1 "$FREE" chat/completions -d "$(chat no-such-model hi)")
expect_eq "unknown model with a good key: 404" "$(status_of "$out")" 404
fid=$(cut -d_ -f2 <<<"$FREE")
u=$(api GET '/api/v1/usage?group_by=key&since=1h' | sed '$d' | jq -c --arg id "$fid" '.items[] | select(.group == $id)')
# (3 served, the 429, this 404, and the 403 "model not in tier" further up)
expect_eq "usage of the free key: 6 requests, 1 limited, 3 errors" "$(jq -r '"\(.requests) \(.limited) \(.errors)"' <<<"$u")" "6 1 3"
expect_eq "...the 403, 404 and 429 are records with their status and no tokens" \
  "$(sqlite3 "$TMP/data/gpuaas.db" "select group_concat(status || ':' || (prompt_tokens + completion_tokens), ' ') from (select status, prompt_tokens, completion_tokens from usage where key_id = '$fid' and status >= 400 order by status)")" "403:0 404:0 429:0"

hval() { tr -d '\r' <"$1" | awk -v h="$2" 'tolower($1) == h ":" {print $2}'; }   # hval FILE NAME
# ---- spec.userLimits: one budget per user across all their keys of the tier ----------
cat >"$TMP/peruser.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: peruser}
spec: {limits: {requestsPerMinute: 100}, userLimits: {requestsPerMinute: 2}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: peruser-m}
spec: {servedNames: [peruser-model], tiers: [peruser], url: "http://127.0.0.1:$UP"}
YAML
check "apply a Tier with userLimits" "$G" apply -f "$TMP/peruser.yaml"
t=$(api GET /api/v1/tiers/peruser | sed '$d')
expect_eq "GET /api/v1/tiers/peruser shows userLimits" \
  "$(jq -c '[.userLimits.requests, .limits.requests[0].limit]' <<<"$t")" '[[{"limit":2,"windowSeconds":60}],100]'
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/peruser-m | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
U1=$(newkey peruser); U2=$(api POST /api/v1/keys -d '{"name":"second","tier":"peruser"}' | sed '$d' | jq -r .key)
CAROL=$("$G" users create carol --namespaces team-a -o json | jq -r .token)
CK=$(TOKEN=$CAROL api POST /api/v1/keys -d '{"name":"c","tier":"peruser"}' | sed '$d' | jq -r .key)
expect_match "two keys of admin and one of carol in tier peruser" "$U1 $U2 $CK" '^gpa_[^ ]+ gpa_[^ ]+ gpa_[^ ]+$'
# the four requests below must fall in one minute window (windows start on the wall clock's minutes)
sec=$((10#$(date -u +%S))); ((sec >= 50)) && sleep $((61 - sec))
codes="$(status_of "$(v1 "$U1" chat/completions -D "$hdr" -d "$(chat peruser-model hi)")")"
lim=$(hval "$hdr" x-ratelimit-limit-requests)
codes+=" $(status_of "$(v1 "$U2" chat/completions -d "$(chat peruser-model hi)")")"
out1=$(v1 "$U1" chat/completions -D "$hdr" -d "$(chat peruser-model hi)")
out2=$(v1 "$U2" chat/completions -d "$(chat peruser-model hi)")
codes+=" $(status_of "$out1") $(status_of "$out2")"
expect_eq "one user's two keys: 200, 200, then 429 on either key" "$codes" "200 200 429 429"
expect_eq "...x-ratelimit-limit-requests shows the user's 2 (the key allows 100)" "$lim" 2
expect_eq "...type requests, rate_limit_exceeded" "$(body_of "$out2" | jq -r '.error.type+" "+.error.code')" "requests rate_limit_exceeded"
expect_match "...the message names the user" "$(body_of "$out1" | jq -r .error.message)" \
  '^Rate limit reached for user admin \(tier peruser, all their keys\) on requests per 60s: Limit 2, Used 2\.'
expect_eq "...x-ratelimit-remaining-requests: 0, retry-after" \
  "$(hval "$hdr" x-ratelimit-remaining-requests) $(( $(hval "$hdr" retry-after) > 0 ))" "0 1"
expect_eq "another user's key of the tier is still served" "$(status_of "$(v1 "$CK" chat/completions -d "$(chat peruser-model hi)")")" 200

# ---- token grants -------------------------------------------------------------------
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/long | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
nomax() { printf '{"model":"long-model","messages":[{"role":"user","content":"%s"}]%s}' "$1" "${2:-}"; }
# the audit's overshoot: 100 tokens a day, at most 5 per request, 30 clients at once, a
# third streaming with max_tokens 20 and the rest naming none (this upstream then writes 500)
: >"$TMP/daily.cfg"
for i in $(seq 1 30); do
  case $((i % 3)) in
    0) d=$(chat long-model "day $i" 20 ',"stream":true') ;;
    1) d=$(nomax "day $i" ',"stream":true') ;;
    2) d=$(nomax "day $i") ;;
  esac
  { echo "url = \"$GPUAAS_SERVER/v1/chat/completions\""; echo "header = \"Authorization: Bearer $DAILY\""
    echo "data = \"$(sed 's/"/\\"/g' <<<"$d")\""; echo 'write-out = "%{http_code}\n"'
    echo 'output = "/dev/null"'; ((i < 30)) && echo next; } >>"$TMP/daily.cfg"
done
res=$(curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max 30 -K "$TMP/daily.cfg")
ok200=$(grep -c '^200$' <<<"$res"); n429=$(grep -c '^429$' <<<"$res")
expect_eq "daily budget: every client answered (200 or 429)" "$((ok200 + n429))" 30
tot=$(api GET '/api/v1/usage?group_by=tier' | sed '$d' | jq '[.items[] | select(.group=="daily") | .totalTokens] | add')
check "daily budget: tokens charged ($tot, $ok200 admitted) never pass the 100 of the day" test "${tot:-99999}" -le 100 -a "$ok200" -gt 0
most=$(sqlite3 "$TMP/data/gpuaas.db" "select max(completion_tokens) || ' ' || count(*) from usage where tier='daily' and status < 400")
expect_eq "...the upstream generated at most the 5 granted, on every admitted request" "$(( ${most% *} <= 5 )) ${most#* }" "1 $ok200"
# a tier of 100 tokens a minute admits a request that names no max_tokens (the next two
# requests must fall in one minute window: windows start on the wall clock's minutes)
sec=$((10#$(date -u +%S))); ((sec >= 50)) && sleep $((61 - sec))
out=$(v1 "$SMALL" chat/completions -D "$hdr" -d "$(nomax 'hi')")
expect_eq "a small tier admits a request without max_tokens" "$(status_of "$out")" 200
c=$(body_of "$out" | jq .usage.completion_tokens)
check "...granted what was left, and the upstream kept to it ($c tokens)" test "${c:-999}" -ge 1 -a "${c:-999}" -lt 100
expect_eq "...x-ratelimit-limit-tokens" "$(hval "$hdr" x-ratelimit-limit-tokens)" 100
out=$(v1 "$SMALL" chat/completions -D "$hdr" -d "$(nomax 'hi')")
expect_eq "the next one: 429 of type tokens, OpenAI's body" "$(status_of "$out") $(body_of "$out" | jq -r '.error.type+" "+.error.code')" \
  "429 tokens rate_limit_exceeded"
expect_match "...x-ratelimit-*-tokens and retry-after" \
  "$(hval "$hdr" x-ratelimit-limit-tokens) $(hval "$hdr" x-ratelimit-remaining-tokens) $(hval "$hdr" x-ratelimit-reset-tokens) $(hval "$hdr" retry-after)" \
  '^100 [0-9]{1,2} [0-9]+m?s [0-9]+$'   # less left than the prompt's bound and one token
expect_eq "...worth a retry: no x-should-retry" "$(hval "$hdr" x-should-retry)" ""
out=$(v1 "$SMALL" chat/completions -D "$hdr" -d "$(chat long-model 'hi' 500)")
expect_eq "a request larger than the whole limit: 429 tokens" "$(status_of "$out") $(body_of "$out" | jq -r .error.type)" "429 tokens"
expect_eq "...x-should-retry: false (no retry can succeed)" "$(hval "$hdr" x-should-retry)" false
expect_match "...saying to lower max_tokens" "$(body_of "$out" | jq -r .error.message)" 'larger than the limit: lower max_tokens to at most [0-9]+\.'
# the tier's shared budget shows in x-ratelimit-* when the key has limits of its own
out=$(v1 "$MIXED" chat/completions -D "$hdr" -d "$(chat long-model 'hi' 4)")
expect_eq "x-ratelimit-*-tokens show the tier's day (30), not the key's minute" \
  "$(status_of "$out") $(hval "$hdr" x-ratelimit-limit-tokens)" "200 30"
check "...remaining $(hval "$hdr" x-ratelimit-remaining-tokens) of 30" test "$(hval "$hdr" x-ratelimit-remaining-tokens)" -lt 30
for _ in 1 2 3 4 5; do out=$(v1 "$MIXED" chat/completions -D "$hdr" -d "$(chat long-model 'hi' 4)"); [[ $(status_of "$out") == 429 ]] && break; done
expect_eq "...and the 429 the tier's day sends names it" "$(status_of "$out") $(hval "$hdr" x-ratelimit-limit-tokens)" "429 30"
check "...remaining $(hval "$hdr" x-ratelimit-remaining-tokens) of 30" test "$(hval "$hdr" x-ratelimit-remaining-tokens)" -lt 30
# a client that leaves mid-stream gives its reservation back
curl -s -N -m 1.5 -H "Authorization: Bearer $METER" -d "$(chat long-model 'SLOW please' 3000 ',"stream":true')" \
  "$GPUAAS_SERVER/v1/chat/completions" >/dev/null 2>&1 &
LEAVER=$!
during=5000
for _ in $(seq 1 10); do   # until the stream is admitted (bounded)
  v1 "$METER" chat/completions -D "$hdr" -d "$(chat long-model 'hi' 1)" >/dev/null
  during=$(hval "$hdr" x-ratelimit-remaining-tokens); ((${during:-5000} <= 2000)) && break; sleep 0.1
done
check "while a stream of max_tokens 3000 runs, its reservation counts (remaining $during of 5000)" test "${during:-5000}" -le 2000
wait "$LEAVER"
after=0
for _ in $(seq 1 50); do
  v1 "$METER" chat/completions -D "$hdr" -d "$(chat long-model 'hi' 1)" >/dev/null
  after=$(hval "$hdr" x-ratelimit-remaining-tokens); ((${after:-0} > 4000)) && break; sleep 0.1
done
check "after the client left, the next answer shows it given back (remaining $after of 5000)" test "${after:-0}" -gt 4000
out=$(v1 "$METER" completions -d '{"model":"long-model","prompt":"say it"}')
expect_eq "/v1/completions without max_tokens: OpenAI's default of 16, told to the upstream" \
  "$(status_of "$out") $(body_of "$out" | jq .usage.completion_tokens)" "200 16"
out=$(v1 "$METER" chat/completions -d "$(chat long-model 'hi' 0)")
expect_eq "max_tokens 0: 400 naming the field" "$(status_of "$out") $(body_of "$out" | jq -r '.error.param + ": " + .error.message')" \
  "400 max_tokens: max_tokens must be at least 1 (got 0)"
out=$(v1 "$METER" chat/completions -d "$(chat long-model 'hi' 2 ',"n":500')")
expect_eq "n past 128: 400 (the reservation counts every choice)" "$(status_of "$out") $(body_of "$out" | jq -r '.error.param + ": " + .error.message')" \
  "400 n: n must be an integer between 1 and 128"

# the client leaves mid-stream: the upstream request is cancelled
before=$(stats .cancelled)
curl -s -N -m 0.6 -H "Authorization: Bearer $GOLD" -d "$(chat fake-model 'SLOW please' 50 ',"stream":true')" \
  "$GPUAAS_SERVER/v1/chat/completions" >/dev/null 2>&1
for _ in $(seq 1 50); do (( $(stats .cancelled) > before )) && break; sleep 0.1; done
expect_eq "client gone: upstream cancelled" "$(( $(stats .cancelled) > before ))" 1

# 200 clients race one tier's token budget (2000 tokens a day, shared by the tier)
: >"$TMP/race.cfg"
for i in $(seq 1 200); do
  { echo "url = \"$GPUAAS_SERVER/v1/chat/completions\""; echo "header = \"Authorization: Bearer $TIGHT\""
    echo "data = \"$(chat fake-model "race $i" 20 | sed 's/"/\\"/g')\""; echo 'write-out = "%{http_code}\n"'
    echo 'output = "/dev/null"'; ((i < 200)) && echo next; } >>"$TMP/race.cfg"
done
res=$(curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max 200 -K "$TMP/race.cfg")
ok200=$(grep -c '^200$' <<<"$res"); n429=$(grep -c '^429$' <<<"$res")
expect_eq "race: every client answered (200 or 429)" "$((ok200 + n429))" 200
check "race: some admitted, some refused" test "$ok200" -gt 0 -a "$n429" -gt 0
tot=$(api GET '/api/v1/usage?group_by=tier' | sed '$d' | jq '[.items[] | select(.group=="tight") | .totalTokens] | add')
check "race: tokens charged ($tot) never overshoot the budget of 2000" test "${tot:-99999}" -le 2000
echo "  race: $ok200 admitted, $n429 refused, $tot tokens charged of 2000"

# usage and metrics
u=$(api GET '/api/v1/usage?group_by=model&since=1h' | sed '$d')
check "usage by model" jq -e '.items[] | select(.group=="fake" and .totalTokens > 0)' <<<"$u"
check "usage marks estimates (no usage reported)" jq -e '.items[] | select(.group=="private" and .estimatedRequests >= 1)' <<<"$u"
check "usage records a cancelled stream as 499" sqlite3 "$TMP/data/gpuaas.db" "select 1 from usage where status=499 limit 1" 
check "gpuaas usage (CLI)" bash -c "'$G' usage --group-by user | grep -q admin"
m=$(curl -s -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/metrics")   # per-user series: admin only
for name in 'authorized_calls{model="fake",tier="gold",user="admin"}' 'limited_calls{model="fake",tier="free",user="admin"}' 'authorized_hits{model="fake",tier="gold",user="admin"}' \
            'gen_ai_client_token_usage_bucket{' 'gen_ai_server_time_to_first_token_seconds_bucket{' 'gen_ai_server_request_duration_seconds_count{'; do
  check "metric $name" grep -qF "$name" <<<"$m"
done

# revocation takes effect on the very next request
id=$(cut -d_ -f2 <<<"$FREE")
check "keys revoke (CLI)" "$G" keys revoke "$id"
out=$(v1 "$FREE" models)
expect_eq "revoked key refused at once" "$(status_of "$out") $(body_of "$out" | jq -r .error.message)" "401 this API key has been revoked"
EVE=$("$G" users create eve --namespaces team-a -o json | jq -r .token)
expect_eq "a user cannot revoke another's key" "$(status_of "$(TOKEN=$EVE api DELETE "/api/v1/keys/$(cut -d_ -f2 <<<"$GOLD")")")" 404
EVEKEY=$(TOKEN=$EVE api POST /api/v1/keys -d '{"name":"e","tier":"free"}' | sed '$d' | jq -r .key)
expect_eq "a user creates a key for themself" "$(TOKEN=$EVE api GET /api/v1/keys | sed '$d' | jq -r '[.items[].user]|unique|join(",")')" eve
"$G" users delete eve >/dev/null
expect_eq "a deleted user's keys stop working at once" "$(status_of "$(v1 "$EVEKEY" models)")" 401

# keys and limits survive a restart; revoked stays revoked
stop_daemon
start_daemon "$cfg" || { fail "restart"; finish; exit 1; }
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/fake | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
expect_eq "gold key works after a restart" "$(status_of "$(v1 "$GOLD" chat/completions -d "$(chat fake-model hi)")")" 200
expect_eq "revoked key still refused after a restart" "$(status_of "$(v1 "$FREE" models)")" 401
kill "${FAKE_PIDS[@]}" 2>/dev/null
finish
