#!/usr/bin/env bash
# /metrics as Prometheus's own linter and the projects whose names it follows see it.
# After some queue activity (an admitted workload, a pending one in the inadmissible set,
# one preempted, one cancelled while admitted, a stopped ClusterQueue) and gateway calls
# through build/fake-openai (chat, completions, embeddings), the admin's scrape:
#  - passes `promtool check metrics` but for the complaints listed in docs/operations.md
#    ("Lint complaints left"), which name metrics DCGM, Limitador or vLLM named; that list
#    is read from the docs, so a complaint the docs do not explain fails here, and so
#    does a listed one that no longer happens (the docs would be stale);
#  - has Kueue's label sets: cohort on the quota and usage gauges, priority_class on
#    kueue_admitted_workloads_total, reason/underlying_cause/priority_class on
#    kueue_evicted_workloads_total, every status of kueue_cluster_queue_status (0 or 1),
#    the inadmissible series of kueue_local_queue_pending_workloads;
#  - has DCGM exporter's label set, and OpenTelemetry GenAI's gen_ai_operation_name.
# promtool comes with the Debian package prometheus (scripts/install-deps.sh): without it
# this test fails, never skips.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
command -v promtool >/dev/null || { fail "promtool is missing: scripts/install-deps.sh must install the Debian package prometheus"; finish; exit 1; }
start_fake up || { fail "fake model server starts"; finish; exit 1; }
PU=$(cat "$TMP/up.port")

cat > "$TMP/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lent}
spec:
  cohortName: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8", borrowingLimit: "2", lendingLimit: "4"}
      - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: held}
spec:
  namespaceSelector: {}
  stopPolicy: Hold
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: solo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: lent}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
YAML
export GPUAAS_GATEWAY_SCRAPE_MS=300   # the model servers' vllm: families, scraped soon
cfg=$(write_config lint "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# queue activity: low is admitted, then preempted by high (InClusterQueue) and waits in
# the inadmissible set; keep (team) is admitted and cancelled: Deactivated
job low lab q 1 'sleep 120' '    kueue.x-k8s.io/priority-class: low' > "$TMP/low.yaml"
job high lab q 1 'sleep 120' '    kueue.x-k8s.io/priority-class: high' > "$TMP/high.yaml"
job keep team q 1 'sleep 120' > "$TMP/keep.yaml"
"$G" submit -f "$TMP/low.yaml" >/dev/null
check "low is admitted" wait_phase lab/low Running 10
"$G" submit -f "$TMP/high.yaml" >/dev/null
check "high preempts it" wait_phase lab/high Running 15
check "low waits" wait_phase lab/low Pending 10
check "the scheduler has set low aside" until_ok 10 wl_says lab/low "nvidia.com/gpu"
"$G" submit -f "$TMP/keep.yaml" >/dev/null
check "keep is admitted" wait_phase team/keep Running 15
check "keep is cancelled" "$G" cancel team/keep

# gateway calls of each OpenAI operation
cat > "$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 100000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: up}
spec: {servedNames: [up-model], tiers: [open], url: "http://127.0.0.1:$PU"}
YAML
check "apply a Tier and a Model" "$G" apply -f "$TMP/models.yaml"
KEY=$(api POST /api/v1/keys -d '{"name":"lint","tier":"open"}' | sed '$d' | jq -r .key)
call() { curl -s -m 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "$2" "$GPUAAS_SERVER/v1/$1"; }
ready() { [[ "$(call chat/completions '{"model":"up-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}')" == 200 ]]; }
check "a chat completion through the gateway" until_ok 10 ready
expect_eq "a text completion" "$(call completions '{"model":"up-model","max_tokens":2,"prompt":"hi"}')" 200
expect_eq "an embedding" "$(call embeddings '{"model":"up-model","input":"hi"}')" 200

scrape() { curl -s -m 10 -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/metrics"; }
check "the model server's vllm: families are on /metrics" until_ok 10 bash -c "curl -s '$GPUAAS_SERVER/metrics' | grep -q '^vllm:'"
m=$(scrape)
printf '%s\n' "$m" > "$TMP/metrics.txt"

# (1) promtool, against the docs' list of what other projects' names leave
allowed=$(awk '/^<!-- lint-allowed:begin -->/{on=1; next} /^<!-- lint-allowed:end -->/{on=0} on && /^\| `/' \
  "$ROOT/docs/operations.md" | sed -E 's/^\| `([^`]+)` \| ([^|]+) \|.*/\1 \2/; s/ +$//')
expect_match "docs/operations.md lists the complaints left" "$(wc -l <<<"$allowed")" '^[1-9]'
lint=$(promtool check metrics <"$TMP/metrics.txt" 2>&1 | sed -E 's/^ +//' | grep -v '^$')
# allowed rows: "GLOB COMPLAINT"; a complaint is explained when a row's glob matches its
# metric and the words are the same; a row no complaint matches is stale
explained_by() {   # explained_by ROW COMPLAINT-LINE
  local glob=${1%% *} want=${1#* } name=${2%% *} what=${2#* }
  # shellcheck disable=SC2053
  [[ "$name" == $glob && "$what" == "$want" ]]
}
unexplained=$(while IFS= read -r l; do
  [[ -n "$l" ]] || continue
  hit=""; while IFS= read -r a; do explained_by "$a" "$l" && { hit=1; break; }; done <<<"$allowed"
  [[ -n "$hit" ]] || echo "$l"
done <<<"$lint")
expect_eq "promtool complains only of names DCGM, Limitador or vLLM chose" "$unexplained" ""
stale=$(while IFS= read -r a; do
  hit=""; while IFS= read -r l; do explained_by "$a" "$l" && { hit=1; break; }; done <<<"$lint"
  [[ -n "$hit" ]] || echo "$a"
done <<<"$allowed")
expect_eq "every complaint the docs list still happens" "$stale" ""

# (2) the label sets
has() { grep -qE -- "$1" <<<"$m"; }
check "quota carries its cohort" has '^kueue_cluster_queue_nominal_quota\{cohort="lab",cluster_queue="lent",flavor="h100",resource="nvidia.com/gpu"\} 1$'
check "a queue without a cohort has cohort=\"\"" has '^kueue_cluster_queue_nominal_quota\{cohort="",cluster_queue="solo",flavor="h100",resource="cpu"\} 8$'
check "usage carries its cohort" has '^kueue_cluster_queue_resource_usage\{cohort="",cluster_queue="solo",flavor="h100",resource="nvidia.com/gpu"\} 1$'
check "reservation too" has '^kueue_cluster_queue_resource_reservation\{cohort="",cluster_queue="solo",flavor="h100",resource="nvidia.com/gpu"\} 1$'
check "borrowing limit where set" has '^kueue_cluster_queue_borrowing_limit\{cohort="lab",cluster_queue="lent",flavor="h100",resource="cpu"\} 2$'
check "lending limit where set" has '^kueue_cluster_queue_lending_limit\{cohort="lab",cluster_queue="lent",flavor="h100",resource="cpu"\} 4$'
expect_eq "no borrowing limit where none is set" "$(grep -c '^kueue_cluster_queue_borrowing_limit{[^}]*resource="nvidia.com/gpu"' <<<"$m")" 0
check "admitted by priority class: low" has '^kueue_admitted_workloads_total\{cluster_queue="solo",priority_class="low"\} 1$'
check "admitted by priority class: high" has '^kueue_admitted_workloads_total\{cluster_queue="solo",priority_class="high"\} 1$'
check "admitted without a class: priority_class=\"\"" has '^kueue_admitted_workloads_total\{cluster_queue="lent",priority_class=""\} 1$'
check "evicted: Preempted, InClusterQueue, low" \
  has '^kueue_evicted_workloads_total\{cluster_queue="solo",reason="Preempted",underlying_cause="InClusterQueue",priority_class="low"\} 1$'
check "evicted: a cancel is Deactivated" \
  has '^kueue_evicted_workloads_total\{cluster_queue="lent",reason="Deactivated",underlying_cause="",priority_class=""\} 1$'
for s in pending:0 active:1 terminating:0; do
  check "cluster_queue_status of solo: ${s%:*} ${s#*:}" has "^kueue_cluster_queue_status\{cluster_queue=\"solo\",status=\"${s%:*}\"\} ${s#*:}\$"
done
for s in pending:1 active:0 terminating:0; do
  check "cluster_queue_status of a held queue: ${s%:*} ${s#*:}" has "^kueue_cluster_queue_status\{cluster_queue=\"held\",status=\"${s%:*}\"\} ${s#*:}\$"
done
check "the preempted workload waits as inadmissible in its LocalQueue" \
  has '^kueue_local_queue_pending_workloads\{name="q",namespace="lab",status="inadmissible"\} 1$'
check "and not as active" has '^kueue_local_queue_pending_workloads\{name="q",namespace="lab",status="active"\} 0$'
check "as in its ClusterQueue" has '^kueue_pending_workloads\{cluster_queue="solo",status="inadmissible"\} 1$'
check "DCGM exporter's labels, in its order" \
  has '^DCGM_FI_DEV_FB_USED\{gpu="0",UUID="GPU-[0-9a-f-]+",pci_bus_id="[^"]+",device="nvidia0",modelName="[^"]+",Hostname="[^"]+",DCGM_FI_DRIVER_VERSION="[^"]*"\} [0-9]+$'
for op in chat text_completion embeddings; do
  check "gen_ai_operation_name=$op on the request duration" \
    has "^gen_ai_server_request_duration_seconds_count\{gen_ai_operation_name=\"$op\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"up\",[^}]*\} 1\$"
done
check "token usage by operation and type" \
  has '^gen_ai_client_token_usage_count\{gen_ai_operation_name="chat",[^}]*gen_ai_token_type="input"\} 1$'

"$G" cancel lab/high >/dev/null 2>&1; "$G" cancel lab/low >/dev/null 2>&1
finish
