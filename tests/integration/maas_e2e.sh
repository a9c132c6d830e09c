#!/usr/bin/env bash
# End-to-end: the official `openai` npm client against the gateway (tests/e2e/gateway.mjs),
# with build/fake-openai standing in for vLLM. Installs the npm packages on first use.
source "$(dirname "$0")/lib.sh"
command -v node >/dev/null || { fail "node is missing (scripts/install-deps.sh)"; finish; exit 1; }
"$ROOT/tests/e2e/setup.sh" >"$TMP/npm.log" 2>&1 || { fail "npm install: $(tail -3 "$TMP/npm.log")"; finish; exit 1; }
start_fake up --token-ms 5 || { fail "fake model server start"; finish; exit 1; }
UP=$(cat "$TMP/up.port")
cfg=$(write_config e2e "$ROOT/examples/demo/node.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
api POST /api/v1/apply --data-binary @- >/dev/null <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: team}
spec: {limits: {requestsPerMinute: 1000, tokensPerMinute: 1000000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: one}
spec: {limits: {requestsPerMinute: 1}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: tiny}
spec: {limits: {tokensPerDay: 100}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: fake}
spec: {servedNames: [fake-model], tiers: [team, one, tiny], url: "http://127.0.0.1:$UP"}
YAML
for _ in $(seq 1 100); do [[ $(api GET /api/v1/models/fake | sed '$d' | jq -r .state) == Ready ]] && break; sleep 0.1; done
KEY=$(api POST /api/v1/keys -d '{"name":"node","tier":"team"}' | sed '$d' | jq -r .key)
LIM=$(api POST /api/v1/keys -d '{"name":"node-limited","tier":"one"}' | sed '$d' | jq -r .key)
TINY=$(api POST /api/v1/keys -d '{"name":"node-tiny","tier":"tiny"}' | sed '$d' | jq -r .key)
out=$(GW=$GPUAAS_SERVER KEY=$KEY LIMITED_KEY=$LIM TOKENS_KEY=$TINY ADMIN_TOKEN=$ADMIN_TOKEN UPSTREAM="http://127.0.0.1:$UP" \
      timeout 60 node "$ROOT/tests/e2e/gateway.mjs" 2>&1); rc=$?
while IFS= read -r line; do
  case "$line" in "ok "*) ok "${line#ok }";; "FAIL "*) fail "${line#FAIL }";; *) echo "  $line";; esac
done <<<"$out"
((rc == 0)) || fail "node exited with $rc"
kill "${FAKE_PIDS[@]}" 2>/dev/null
finish
