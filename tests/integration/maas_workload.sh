#!/usr/bin/env bash
# Workload-backed Models: gpuaas runs the model server itself, as a long-running Job in
# a Kueue queue holding its GPU share. build/fake-openai stands in for vLLM (no GPU or
# model here). Covers: the server starts and becomes Ready through its readiness path;
# requests reach it; when it dies it is restarted with back-off; a model scaled to zero
# answers 503 "starting", starts on that first request, and stops again when idle.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
FAKE=$FAKE_OPENAI
cfg=$(write_config wl "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
cat >"$TMP/m.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: team}
spec: {limits: {requestsPerMinute: 1000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: served}
spec:
  servedNames: [served-model]
  tiers: [team]
  workload:
    namespace: team-a
    queue: main
    command: ["$FAKE", "--port", "{port}", "--model", "{model}", "--ready-after-ms", "300"]
    resources: {cpu: "1", nvidia.com/gpu: "1"}
    replicas: 1
    readinessPath: /health
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: lazy}
spec:
  servedNames: [lazy-model]
  tiers: [team]
  workload:
    namespace: team-b
    queue: main
    command: ["$FAKE", "--port", "{port}", "--model", "{model}"]
    resources: {cpu: "1", nvidia.com/gpu: "1"}
    minReplicas: 0
    idleSeconds: 2
YAML
check "apply workload-backed Models" "$G" apply -f "$TMP/m.yaml"
state() { api GET "/api/v1/models/$1" | sed '$d' | jq -r "${2:-.state}"; }
wait_state() { for _ in $(seq 1 $((${3:-20} * 10))); do [[ $(state "$1") == "$2" ]] && return 0; sleep 0.1; done; return 1; }
check "the model server starts and becomes Ready" wait_state served Ready
expect_eq "it runs as a Job in its queue" "$(wl_field team-a/maas-served-0 .phase)" Running
expect_eq "...holding its GPU share" "$(wl_field team-a/maas-served-0 '.podSets[0].requests["nvidia.com/gpu"]')" 1
KEY=$(api POST /api/v1/keys -d '{"name":"k","tier":"team"}' | sed '$d' | jq -r .key)
v1() { curl -s -H "Authorization: Bearer $KEY" -w '\n%{http_code}' -d "$2" "$GPUAAS_SERVER/v1/$1"; }
out=$(v1 chat/completions '{"model":"served-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}')
expect_eq "a request reaches the workload's server" "$(status_of "$out") $(body_of "$out" | jq -r .model)" "200 served-model"

# the server dies: the request fails cleanly, the server is restarted with back-off
out=$(v1 chat/completions '{"model":"served-model","messages":[{"role":"user","content":"CRASH now"}]}')
expect_eq "the request to a dying server gets 502" "$(status_of "$out") $(body_of "$out" | jq -r .error.type)" "502 api_error"
check "it is restarted and Ready again" bash -c "for i in \$(seq 1 200); do
  [[ \$(curl -s -H 'Authorization: Bearer $ADMIN_TOKEN' $GPUAAS_SERVER/api/v1/models/served | jq -r '.state+\" \"+(.replicaStatus[0].restarts|tostring)') == 'Ready 1' ]] && exit 0; sleep 0.1; done; exit 1"
expect_eq "...and serves again" "$(status_of "$(v1 chat/completions '{"model":"served-model","messages":[{"role":"user","content":"hi"}]}')")" 200

# scale to zero
expect_eq "a minReplicas: 0 model starts scaled to zero" "$(state lazy)" ScaledToZero
out=$(v1 chat/completions '{"model":"lazy-model","messages":[{"role":"user","content":"hi"}]}')
expect_eq "its first request: 503 model_starting" "$(status_of "$out") $(body_of "$out" | jq -r .error.code)" "503 model_starting"
expect_match "...saying it starts" "$(body_of "$out" | jq -r .error.message)" 'scaled to zero and starts now'
check "it starts on that request" wait_state lazy Ready
expect_eq "...and serves" "$(status_of "$(v1 chat/completions '{"model":"lazy-model","messages":[{"role":"user","content":"hi"}]}')")" 200
check "idle for idleSeconds: scaled to zero again" wait_state lazy ScaledToZero 15
check "...its Job is gone" bash -c "for i in \$(seq 1 100); do
  [[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' $GPUAAS_SERVER/api/v1/workloads/team-b/maas-lazy-0) == 404 ]] && exit 0; sleep 0.1; done; exit 1"
check "gpuaas models shows both" bash -c "'$G' models | grep -q served-model"
# deleting the model stops its server
check "delete the model" api DELETE /api/v1/models/served
check "...its server is stopped" bash -c "for i in \$(seq 1 100); do
  [[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' $GPUAAS_SERVER/api/v1/workloads/team-a/maas-served-0) == 404 ]] && exit 0; sleep 0.1; done; exit 1"
finish
