#!/usr/bin/env bash
# OpenAI API fidelity of the gateway, and model servers that cannot serve, over real
# HTTP against the real daemon (build/fake-openai stands in for vLLM). Covers:
# GET /v1/models/{id} (models.retrieve: OpenAI's Model object; 404 model_not_found for
# an unknown id and for one the key's tier does not open, worded alike); 405 with Allow
# on the gateway and its REST collections; x-request-id on every answer (200, 401, 404,
# 405, 413, 429, 503, the REST API, the portal, a request the HTTP layer refuses), the
# client's own echoed when it is safe and replaced when not; a url model whose server
# is down answers 503 upstream_unavailable naming the upstream and the reason, with
# retry-after, and shows Unavailable; a workload model whose command is a missing
# binary is given up on after a few starts: Failed with the reason and its log's tail
# in GET /api/v1/models, `gpuaas models`, the portal and the 503 (model_failed,
# x-should-retry: false), its failed Job kept (not restarted, not deleted) until the
# Model is deleted.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
start_fake up --tokens 4 --token-ms 1 || { fail "fake model server starts"; finish; exit 1; }
UP=$(cat "$TMP/up.port")
DEAD=$((UP == 65535 ? UP - 1 : UP + 1))
curl -s -m 1 "http://127.0.0.1:$DEAD/" >/dev/null 2>&1 && DEAD=9   # discard port: refused
cfg=$(write_config fid "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

cat >"$TMP/m.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: team}
spec: {limits: {requestsPerMinute: 1000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: other}
spec: {limits: {requestsPerMinute: 1000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: once}
spec: {limits: {requestsPerMinute: 1}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: up}
spec: {servedNames: [up-model, org/slashed-model], tiers: [team, once], url: "http://127.0.0.1:$UP", maxBodyBytes: 1024}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: hidden}
spec: {servedNames: [hidden-model], tiers: [other], url: "http://127.0.0.1:$UP"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: down}
spec: {servedNames: [down-model], tiers: [team], url: "http://127.0.0.1:$DEAD"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: broken}
spec:
  servedNames: [broken-model]
  tiers: [team]
  workload:
    namespace: team-a
    queue: main
    command: ["/nonexistent/bin/vllm-server", "--port", "{port}"]
    resources: {cpu: "1", nvidia.com/gpu: "1"}
YAML
check "apply the models" "$G" apply -f "$TMP/m.yaml"
KEY=$(api POST /api/v1/keys -d '{"name":"k","tier":"team"}' | sed '$d' | jq -r .key)
ONCE=$(api POST /api/v1/keys -d '{"name":"o","tier":"once"}' | sed '$d' | jq -r .key)
# hv METHOD PATH [CURL ARGS]: the head and the body, as curl -i prints them
hv() { local m=$1 p=$2; shift 2; curl -s -i -X "$m" -H "Authorization: Bearer $KEY" "$@" "$GPUAAS_SERVER$p" | tr -d '\r'; }
hdr() { grep -i "^$1:" <<<"$2" | head -1 | sed 's/^[^:]*: *//'; }
code() { head -1 <<<"$1" | awk '{print $2}'; }
json() { sed '1,/^$/d' <<<"$1" | jq -r "$2"; }
RID='^req_[0-9a-f]{32}$'

# ---- models.retrieve ----
out=$(hv GET /v1/models/up-model)
expect_eq "GET /v1/models/{id}: OpenAI's Model object" "$(code "$out") $(json "$out" -c)" \
  '200 {"id":"up-model","object":"model","created":0,"owned_by":"gpuaas"}'
out=$(hv GET /v1/models/org%2Fslashed-model)
expect_eq "...an id with a slash, encoded as the clients do" "$(code "$out") $(json "$out" .id)" "200 org/slashed-model"
expect_eq "...and as it is" "$(json "$(hv GET /v1/models/org/slashed-model)" .id)" "org/slashed-model"
out=$(hv GET /v1/models/nope-model)
expect_eq "an unknown id: 404 model_not_found" "$(code "$out") $(json "$out" .error.code) $(json "$out" .error.param)" \
  "404 model_not_found model"
hidden=$(hv GET /v1/models/hidden-model)
expect_eq "a model the key's tier does not open: the same 404" "$(code "$hidden") $(json "$hidden" .error.code)" "404 model_not_found"
expect_eq "...worded as for one that does not exist" "$(json "$hidden" .error.message | sed 's/hidden-model/X/')" \
  "$(json "$out" .error.message | sed 's/nope-model/X/')"
expect_eq "without a key: 401" "$(code "$(curl -s -i "$GPUAAS_SERVER/v1/models/up-model")")" 401

# ---- 405 carries Allow ----
out=$(hv POST /v1/models)
expect_eq "POST /v1/models: 405 with Allow: GET" "$(code "$out") $(hdr allow "$out")" "405 GET"
out=$(hv DELETE /v1/models/up-model)
expect_eq "DELETE /v1/models/{id}: 405 with Allow: GET" "$(code "$out") $(hdr allow "$out")" "405 GET"
out=$(hv GET /v1/chat/completions)
expect_eq "GET /v1/chat/completions: 405 with Allow: POST" "$(code "$out") $(hdr allow "$out")" "405 POST"
out=$(curl -s -i -X PUT -H "Authorization: Bearer $ADMIN_TOKEN" "$GPUAAS_SERVER/api/v1/keys" | tr -d '\r')
expect_eq "PUT /api/v1/keys: 405 with Allow" "$(code "$out") $(hdr allow "$out")" "405 GET, POST"
out=$(curl -s -i -X POST -H "Authorization: Bearer $ADMIN_TOKEN" "$GPUAAS_SERVER/api/v1/models/up" | tr -d '\r')
expect_eq "POST /api/v1/models/NAME: 405 with Allow" "$(code "$out") $(hdr allow "$out")" "405 GET, DELETE"

# ---- x-request-id on every answer ----
for what in "200:GET /v1/models" "404:GET /v1/nowhere" "405:PUT /v1/models" "200:GET /v1/models/up-model"; do
  set -- ${what#*:}
  out=$(hv "$1" "$2")
  expect_match "x-request-id on $1 $2 ($(code "$out"))" "$(code "$out") $(hdr x-request-id "$out")" "^${what%%:*} req_[0-9a-f]{32}$"
done
out=$(curl -s -i "$GPUAAS_SERVER/v1/models" | tr -d '\r')
expect_match "...on a 401" "$(code "$out") $(hdr x-request-id "$out")" '^401 req_[0-9a-f]{32}$'
big=$(head -c 2000 /dev/zero | tr '\0' a)
out=$(hv POST /v1/chat/completions -d "{\"model\":\"up-model\",\"messages\":[{\"role\":\"user\",\"content\":\"$big\"}]}")
expect_match "...on a 413" "$(code "$out") $(hdr x-request-id "$out")" '^413 req_[0-9a-f]{32}$'
one() { curl -s -i -H "Authorization: Bearer $ONCE" -d '{"model":"up-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}' \
  "$GPUAAS_SERVER/v1/chat/completions" | tr -d '\r'; }
one >/dev/null
out=$(one)
expect_match "...on a 429" "$(code "$out") $(hdr x-request-id "$out")" '^429 req_[0-9a-f]{32}$'
out=$(hv POST /v1/chat/completions -d '{"model":"up-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}')
expect_match "...on a plain answer" "$(code "$out") $(hdr x-request-id "$out")" '^200 req_[0-9a-f]{32}$'
out=$(hv POST /v1/chat/completions -d '{"model":"up-model","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":2}')
expect_match "...on a stream" "$(code "$out") $(hdr x-request-id "$out")" '^200 req_[0-9a-f]{32}$'
a=$(hdr x-request-id "$(hv GET /v1/models)") b=$(hdr x-request-id "$(hv GET /v1/models)")
check "...a new one each request ($a $b)" test "$a" != "$b"
out=$(hv GET /v1/models -H 'x-request-id: my-trace.42:abc_9')
expect_eq "the client's own id is echoed" "$(hdr x-request-id "$out")" "my-trace.42:abc_9"
out=$(hv GET /v1/models -H 'x-request-id: evil id<script>')
expect_match "...one with unsafe characters is replaced" "$(hdr x-request-id "$out")" "$RID"
out=$(hv GET /v1/models -H "x-request-id: $(head -c 65 /dev/zero | tr '\0' a)")
expect_match "...and one longer than 64" "$(hdr x-request-id "$out")" "$RID"
out=$(curl -s -i -H "Authorization: Bearer $ADMIN_TOKEN" "$GPUAAS_SERVER/api/v1/workloads/team-a/none" | tr -d '\r')
expect_match "...on the REST API" "$(code "$out") $(hdr x-request-id "$out")" '^404 req_[0-9a-f]{32}$'
out=$(curl -s -i "$GPUAAS_SERVER/login" | tr -d '\r')
expect_match "...on the portal" "$(code "$out") $(hdr x-request-id "$out")" '^200 req_[0-9a-f]{32}$'
out=$(printf 'GET /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n' |
      curl -s -m 5 telnet://127.0.0.1:"${GPUAAS_SERVER##*:}" 2>/dev/null | tr -d '\r')
expect_match "...on a request the HTTP layer refuses" "$(code "$out") $(hdr x-request-id "$out")" '^400 req_[0-9a-f]{32}$'

# ---- a url model whose server is down ----
state() { api GET "/api/v1/models/$1" | sed '$d' | jq -r "${2:-.state}"; }
wait_state() { for _ in $(seq 1 $((${3:-20} * 10))); do [[ $(state "$1") == "$2" ]] && return 0; sleep 0.1; done; return 1; }
check "a url model whose server is down shows Unavailable" wait_state down Unavailable 10
expect_eq "...saying why" "$(state down .message)" "model down: upstream http://127.0.0.1:$DEAD is unavailable (connection refused)"
out=$(hv POST /v1/chat/completions -d '{"model":"down-model","messages":[{"role":"user","content":"hi"}]}')
expect_eq "its request: 503 upstream_unavailable, not model_starting" "$(code "$out") $(json "$out" .error.code)" \
  "503 upstream_unavailable"
expect_eq "...naming the upstream and the reason" "$(json "$out" .error.message)" \
  "model down: upstream http://127.0.0.1:$DEAD is unavailable (connection refused)"
expect_eq "...with retry-after" "$(hdr retry-after "$out")" 5

# ---- a workload model whose server can never start ----
check "a model server that is a missing binary ends Failed" wait_state broken Failed 60
msg=$(state broken .message)
expect_match "...with the reason and where its log is" "$msg" \
  '^model broken failed: its server exited with code [0-9]+.*3 times in a row without becoming ready; see gpuaas logs team-a/maas-broken-0$'
log=$(state broken .log)
expect_match "...and the end of its log" "$log" 'nonexistent/bin/vllm-server'
out=$(hv POST /v1/chat/completions -d '{"model":"broken-model","messages":[{"role":"user","content":"hi"}]}')
expect_eq "its request: 503 model_failed, not model_starting" "$(code "$out") $(json "$out" .error.code)" "503 model_failed"
expect_eq "...with the same words" "$(json "$out" .error.message)" "$msg"
expect_eq "...and x-should-retry: false (the openai clients give up at once)" "$(hdr x-should-retry "$out")" false
expect_eq "its failed Job stays to be read" "$(wl_field team-a/maas-broken-0 .phase)" Failed
r0=$(state broken '.replicaStatus[0].restarts')
sleep 3
expect_eq "...not restarted nor deleted" "$(wl_field team-a/maas-broken-0 .phase) $(state broken '.replicaStatus[0].restarts') $(state broken .state)" \
  "Failed $r0 Failed"
check "...its log is there too" bash -c "'$G' logs team-a/maas-broken-0 | grep -q nonexistent"
cli=$("$G" models)
expect_match "gpuaas models: Failed" "$(grep '^broken' <<<"$cli")" 'Failed'
check "...with the reason under the table" grep -qF "Failed: $msg" <<<"$cli"
check "...and the end of its log" grep -q '^    .*nonexistent/bin/vllm-server' <<<"$cli"
jar=$TMP/admin.jar
login=$(curl -s -c "$jar" -b "$jar" "$GPUAAS_SERVER/login" | grep -o 'name="_login" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
curl -s -o /dev/null -c "$jar" -b "$jar" --data-urlencode "_login=$login" --data-urlencode "token=$ADMIN_TOKEN" "$GPUAAS_SERVER/login"
page=$(curl -s -b "$jar" "$GPUAAS_SERVER/ui/models")
check "the portal's Models page says it failed and why" grep -qF "see gpuaas logs team-a/maas-broken-0" <<<"$page"
check "...and shows the end of its log" grep -q 'nonexistent/bin/vllm-server' <<<"$page"
check "...and why the url model is down" grep -qF "http://127.0.0.1:$DEAD is unavailable (connection refused)" <<<"$page"
check "delete the model" api DELETE /api/v1/models/broken
check "...its failed Job goes with it" bash -c "for i in \$(seq 1 100); do
  [[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' $GPUAAS_SERVER/api/v1/workloads/team-a/maas-broken-0) == 404 ]] && exit 0; sleep 0.1; done; exit 1"
finish
