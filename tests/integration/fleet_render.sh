#!/usr/bin/env bash
# `gpuaas render` (docs/fleet.md, "Render") on a two-cluster fleet in a temporary folder:
# each cluster's folder gets its Kueue objects, every one valid against Kueue's CRD
# schemas (tests/k8s/validate.mjs with ajv); rendering again changes no byte; a
# ClusterQueue taken out of the Fleet loses its file; a request given with -f lands in the
# folder of the cluster it names; mistakes name the file and the field and change nothing.
# No daemon: render is offline.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
K8S=$ROOT/tests/k8s
if ! "$K8S/install.sh"; then fail "npm install of ajv and yaml (tests/k8s/install.sh)"; finish; exit 1; fi
W=$TMP/cfg
mkdir -p "$W"
cat > "$W/gpuaas.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
manifests: [queues.yaml, fleet.yaml]
YAML
cat > "$W/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {gpu.model: h100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: lab}
spec: {parentName: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: lab
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "4", borrowingLimit: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: main, namespace: team-a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: main, namespace: team-b}
spec: {clusterQueue: team-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
description: deadline work
YAML
fleet() {   # the Fleet with gpu-b's clusterQueues as given
  cat > "$W/fleet.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Fleet
metadata: {name: fleet}
spec:
  git: {repo: gitops.git}
  clusters:
  - name: hub
    namespaces: [team-a]
    clusterQueues: [team-a]
    multiKueue: {workers: [gpu-b]}
  - name: gpu-b
    namespaces: [team-a, team-b]
    clusterQueues: [$1]
YAML
}
fleet "team-a, team-b"
OUT=$TMP/out

out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" 2>&1); rc=$?
expect_eq "render: exit 0" "$rc" 0
expect_match "render: says what it wrote" "$out" 'gpu-b: 10 objects in .*/clusters/gpu-b \(10 written, 0 removed\)'
for f in clusters/hub/cluster/clusterqueue-team-a.yaml clusters/hub/cluster/admissioncheck-multikueue.yaml \
         clusters/hub/cluster/multikueueconfig-hub.yaml clusters/hub/cluster/multikueuecluster-gpu-b.yaml \
         clusters/hub/team-a/localqueue-main.yaml clusters/gpu-b/team-b/localqueue-main.yaml \
         clusters/gpu-b/cluster/cohort-org.yaml clusters/gpu-b/cluster/workloadpriorityclass-high.yaml; do
  check "render: $f" test -f "$OUT/$f"
done
check "render: hub offers no team-b" test ! -e "$OUT/clusters/hub/team-b"
check "render: the manager's queue names the MultiKueue check" grep -q '^ *- name: multikueue$' "$OUT/clusters/hub/cluster/clusterqueue-team-a.yaml"

# every Kueue object against the CRDs (Namespaces are core/v1: not Kueue's schemas)
mapfile -t kueue < <(grep -l '^apiVersion: kueue.x-k8s.io/v1beta2$' -r "$OUT" | sort)
v=$(node "$K8S/validate.mjs" "${kueue[@]}" 2>&1); rc=$?
expect_eq "validate: ${#kueue[@]} Kueue objects valid" "$rc" 0
expect_eq "validate: every kind" "$(grep -c '^valid' <<<"$v")" "${#kueue[@]}"
((rc == 0)) || echo "$v" | grep -v '^valid'
expect_match "validate: the MultiKueue kinds were among them" "$v" 'valid MultiKueueCluster gpu-b'

# again: no byte changes, nothing rewritten
snap() { (cd "$OUT" && find . -type f | sort | xargs sha256sum); }
before=$(snap)
touch -d '2020-01-01' "$OUT/clusters/hub/cluster/clusterqueue-team-a.yaml"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" 2>&1)
expect_eq "re-render: same bytes" "$(snap)" "$before"
expect_match "re-render: nothing written" "$out" 'hub: 10 objects .*\(0 written, 0 removed\)'
expect_eq "re-render: an unchanged file is not rewritten" "$(date -r "$OUT/clusters/hub/cluster/clusterqueue-team-a.yaml" +%Y)" 2020

# a queue taken out of gpu-b: its file (and its LocalQueue's, and the emptied folder) go;
# a file that is not YAML stays, and nothing outside the folder is touched
echo keep > "$OUT/clusters/gpu-b/README"
echo keep > "$OUT/elsewhere.yaml"
fleet "team-a"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" --cluster gpu-b 2>&1); rc=$?
expect_eq "remove: exit 0" "$rc" 0
check "remove: the ClusterQueue's file is gone" test ! -e "$OUT/clusters/gpu-b/cluster/clusterqueue-team-b.yaml"
check "remove: its LocalQueue's too" test ! -e "$OUT/clusters/gpu-b/team-b"
check "remove: team-a's stays" test -f "$OUT/clusters/gpu-b/cluster/clusterqueue-team-a.yaml"
check "remove: a README stays" test -f "$OUT/clusters/gpu-b/README"
check "remove: outside the cluster folders nothing is touched" test -f "$OUT/elsewhere.yaml"
expect_match "remove: says so" "$out" '\(0 written, 2 removed\)'

# a request for gpu-b (by its annotation) lands in gpu-b's folder
cat > "$TMP/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: main}
  annotations: {gpuaas.dev/cluster: gpu-b}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML
"$G" render --config "$W/gpuaas.yaml" --out "$OUT" -f "$TMP/job.yaml" >/dev/null 2>&1
check "request: in gpu-b's folder" test -f "$OUT/clusters/gpu-b/team-a/job-train.yaml"
check "request: not in hub's" test ! -e "$OUT/clusters/hub/team-a/job-train.yaml"
check "request: rendered suspended for Kueue" grep -q '^  suspend: true$' "$OUT/clusters/gpu-b/team-a/job-train.yaml"

# mistakes: file, line and field named; exit 1 (usage: 2); nothing changes
before=$(snap)
sed 's/^    namespaces: \[team-a\]$/    namespaces: [team-a]\n    colour: blue/' "$W/fleet.yaml" > "$W/bad.yaml"
mv "$W/bad.yaml" "$W/fleet.yaml"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" 2>&1); rc=$?
expect_eq "error: exit 1" "$rc" 1
expect_match "error: file, line and field" "$out" "fleet.yaml:9: spec.clusters\[0\].colour: unknown field"
fleet "team-a, team-c"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" 2>&1); rc=$?
expect_eq "error: an unknown queue, exit 1" "$rc" 1
expect_match "error: names the queue's field" "$out" 'spec.clusters\[1\].clusterQueues\[1\]: ClusterQueue team-c is not among'
expect_eq "error: nothing written" "$(snap)" "$before"
fleet "team-a"
sed -i '/gpuaas.dev\/cluster/d' "$TMP/job.yaml"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" -f "$TMP/job.yaml" 2>&1); rc=$?
expect_eq "error: a request without a cluster, exit 1" "$rc" 1
expect_match "error: names the request's file and annotation" "$out" "job.yaml:.*metadata.annotations.gpuaas.dev/cluster: Required"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" --cluster nope 2>&1); rc=$?
expect_eq "error: --cluster unknown, exit 2" "$rc" 2
expect_match "error: lists the clusters" "$out" 'no cluster "nope" in Fleet fleet \(clusters: hub gpu-b\)'
sed -i 's/manifests: .*/manifests: [queues.yaml]/' "$W/gpuaas.yaml"
out=$("$G" render --config "$W/gpuaas.yaml" --out "$OUT" 2>&1); rc=$?
expect_match "error: no Fleet" "$out" 'gpuaas.yaml: no Fleet object in manifests'
expect_eq "error: no Fleet, exit 1" "$rc" 1
out=$("$G" render --out "$OUT" 2>&1); rc=$?
expect_eq "usage: --config missing, exit 2" "$rc" 2
expect_match "usage: says which" "$out" '--config FILE is required'
expect_match "help" "$("$G" render --help)" '^usage: gpuaas render --config FILE'
finish
