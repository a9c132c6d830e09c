#!/usr/bin/env bash
# Objects out as they came in: `gpuaas get KIND -o yaml|json` prints Kueue's objects
# (apiVersion, kind, metadata, spec as applied, status in Kueue's shapes) that validate
# against Kueue's CRD schemas (tests/k8s/crds, with ajv: tests/k8s/validate.mjs), for all
# six kinds and for workloads pending, admitted and finished; and what get prints applies
# back as "unchanged". The tables stay as they were.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
K8S=$ROOT/tests/k8s
if ! "$K8S/install.sh"; then fail "npm install of ajv and yaml (tests/k8s/install.sh)"; finish; exit 1; fi
cat > "$TMP/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100, labels: {tier: gold}}
spec:
  nodeLabels: {gpu.model: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  cohortName: lab
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: 1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: solo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
description: "goes first"
YAML
cfg=$(write_config objout "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# a finished, an admitted (running) and a pending workload
job done lab q 1 'echo done' '    kueue.x-k8s.io/priority-class: urgent' > "$TMP/done.yaml"
job run lab q 1 'sleep 60' > "$TMP/run.yaml"
job wait lab q 1 'echo waited' > "$TMP/wait.yaml"
"$G" submit -f "$TMP/done.yaml" >/dev/null
check "the first finishes" wait_phase lab/done Succeeded 20
"$G" submit -f "$TMP/run.yaml" >/dev/null
check "the second runs" wait_phase lab/run Running 20
"$G" submit -f "$TMP/wait.yaml" >/dev/null
check "the third waits for quota" until_ok 10 wl_says lab/wait "nvidia.com/gpu"

# every kind, as a list and as one object, in YAML and in JSON
mkdir -p "$TMP/out"
for k in cq lq wl rf cohort wpc; do
  "$G" get "$k" -o yaml > "$TMP/out/$k-list.yaml" 2>"$TMP/out/$k.err" || fail "get $k -o yaml: $(cat "$TMP/out/$k.err")"
  "$G" get "$k" -o json > "$TMP/out/$k-list.json" 2>"$TMP/out/$k.err" || fail "get $k -o json: $(cat "$TMP/out/$k.err")"
  expect_eq "get $k -o json is a v1 List" "$(jq -r '.apiVersion + " " + .kind' "$TMP/out/$k-list.json")" "v1 List"
done
"$G" get cq solo -o yaml > "$TMP/out/cq-one.yaml"
"$G" get lq lab/q -o json > "$TMP/out/lq-one.json"
"$G" get wl lab/run -o yaml > "$TMP/out/wl-one.yaml"
"$G" get rf h100 -o json > "$TMP/out/rf-one.json"
v=$(node "$K8S/validate.mjs" "$TMP"/out/*.yaml "$TMP"/out/*.json 2>&1); rc=$?
expect_eq "every object validates against Kueue's CRDs" "$rc" 0
[[ $rc == 0 ]] || echo "$v" | grep -v '^valid' | head -20
expect_eq "objects validated (5 applied x2, 3 workloads x2, 4 by name)" "$(grep -c '^valid' <<<"$v")" 20

j() { jq -r "$1" "$TMP/out/$2"; }
expect_eq "ClusterQueue: apiVersion, kind" "$(j '.items[0] | .apiVersion + " " + .kind' cq-list.json)" "kueue.x-k8s.io/v1beta2 ClusterQueue"
expect_eq "ClusterQueue: spec as applied" "$(j '.items[0].spec.resourceGroups[0].flavors[0].resources[1].nominalQuota' cq-list.json)" 1
expect_match "ClusterQueue: a creationTimestamp" "$(j '.items[0].metadata.creationTimestamp' cq-list.json)" '^20[0-9]{2}-'
expect_eq "ClusterQueue: counts" "$(j '.items[0].status | "\(.pendingWorkloads) \(.reservingWorkloads) \(.admittedWorkloads)"' cq-list.json)" "1 1 1"
expect_eq "ClusterQueue: GPU usage per flavor" \
  "$(j '.items[0].status.flavorsUsage[] | select(.name=="h100") | .resources[] | select(.name=="nvidia.com/gpu") | "\(.total) \(.borrowed)"' cq-list.json)" "1 0"
expect_eq "ClusterQueue: Active" "$(j '.items[0].status.conditions[] | select(.type=="Active") | .status + " " + .reason' cq-list.json)" "True Ready"
expect_eq "LocalQueue: namespace and counts" "$(j '.metadata.namespace + " \(.status.pendingWorkloads) \(.status.admittedWorkloads)"' lq-one.json)" "lab 1 1"
expect_eq "LocalQueue: its GPU usage" "$(j '.status.flavorsUsage[0].resources[] | select(.name=="nvidia.com/gpu") | .total' lq-one.json)" 1
expect_eq "ResourceFlavor: labels kept" "$(j '.metadata.labels.tier' rf-one.json)" gold
expect_eq "WorkloadPriorityClass: value" "$(j '.items[0].value' wpc-list.json)" 1000
wl() { jq -r --arg n "$1" ".items[] | select(.metadata.name==\$n) | $2" "$TMP/out/wl-list.json"; }
expect_eq "Workload: kind and queue" "$(wl run '.kind + " " + .spec.queueName')" "Workload q"
expect_eq "Workload: the Job's pod template" "$(wl run '.spec.podSets[0].template.spec.containers[0].name + " \(.spec.podSets[0].count)"')" "main 1"
expect_eq "admitted: admission" "$(wl run '.status.admission.clusterQueue + " " + .status.admission.podSetAssignments[0].flavors["nvidia.com/gpu"]')" "solo h100"
expect_eq "admitted: Admitted=True" "$(wl run '.status.conditions[] | select(.type=="Admitted") | .status')" True
expect_eq "admitted: PodsReady=True while it runs" "$(wl run '.status.conditions[] | select(.type=="PodsReady") | .status')" True
expect_eq "pending: QuotaReserved=False, no admission" "$(wl wait '[(.status.conditions[] | select(.type=="QuotaReserved") | .status), (.status.admission // "none")] | join(" ")')" "False none"
expect_eq "finished: Finished=True" "$(wl done '.status.conditions[] | select(.type=="Finished") | .status + " " + .reason')" "True Succeeded"
expect_eq "finished: its priority class" "$(wl done '.spec.priorityClassName + " \(.spec.priority)"')" "urgent 1000"
expect_eq "one workload by name is itself" "$(grep -m1 '^kind:' "$TMP/out/wl-one.yaml")" "kind: Workload"

# what get prints applies back unchanged
for ref in "cq solo" "lq lab/q" "rf h100" "cohort lab" "wpc urgent"; do
  out=$("$G" get $ref -o yaml | "$G" apply -f - 2>&1)
  expect_match "get $ref -o yaml | apply -f -: unchanged" "$out" ' unchanged$'
done
out=$("$G" get cq -o yaml | "$G" apply -f - 2>&1)
expect_match "a whole List applies back unchanged too" "$out" 'ClusterQueue solo unchanged'
# an edit to the printed object still configures it
out=$("$G" get cq solo -o yaml | sed 's/queueingStrategy: StrictFIFO/queueingStrategy: BestEffortFIFO/' | "$G" apply -f - 2>&1)
expect_match "an edited spec is configured" "$out" 'ClusterQueue solo configured'
expect_eq "and the creationTimestamp stays" "$("$G" get cq solo -o json | jq -r .metadata.creationTimestamp)" \
  "$(j '.items[0].metadata.creationTimestamp' cq-list.json)"

# the REST form, and the tables stay as they were
r=$(api GET '/api/v1/clusterqueues/solo?format=k8s')
expect_eq "GET ...?format=k8s answers the object" "$(body_of "$r" | jq -r .kind)" ClusterQueue
r=$(api GET '/api/v1/clusterqueues/solo')
expect_eq "without it, the flat view as before" "$(body_of "$r" | jq -r '.name + " \(.admittedWorkloads)"')" "solo 1"
r=$(api GET '/api/v1/clusterqueues?format=yaml')
expect_eq "an unknown format is refused" "$(status_of "$r")" 400
expect_match "get cq: the table" "$("$G" get cq)" '^NAME +COHORT +STRATEGY'
expect_match "get wl: the ls table" "$("$G" get wl -n lab)" 'NAMESPACE +NAME'
"$G" cancel lab/run lab/wait >/dev/null
finish
