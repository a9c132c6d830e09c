#!/usr/bin/env bash
# A fleet request's status read back from its cluster, end to end (docs/fleet.md "Status
# read-back"): the real daemon publishes the request to a bare git remote and follows the
# cluster's API server, whose answers the test sets. That API server is
# tests/fakes/fake_kube.py: a real kube-apiserver (etcd, Kueue's CRDs and controllers)
# cannot be installed on these machines, so the fake speaks its protocol instead (list,
# watch with chunked JSON events, bookmarks, 410 Gone, bearer tokens). The test plays
# Kueue: it creates the Workload and the Job the cluster would. Checked through REST and
# the portal: pending with Kueue's reason and a position, admitted and running, a watch
# broken while the Job finishes, a 410 that forces a relist (a Workload deleted meanwhile
# disappears), expiry once finished (the file leaves git: Argo CD prunes the Job), and a
# cluster whose token is wrong shown as not connected, with the 401.
source "$(dirname "$0")/lib.sh"
command -v git >/dev/null || { fail "git is not installed (scripts/install-deps.sh)"; finish; exit 1; }
git init -q --bare -b main "$TMP/remote.git"

python3 "$ROOT/tests/fakes/fake_kube.py" --token s3cret --bookmark-interval 0.5 >"$TMP/kube.port" 2>"$TMP/kube.log" &
KUBE_PID=$!
trap 'kill $KUBE_PID 2>/dev/null' EXIT
until_ok 20 test -s "$TMP/kube.port" || { fail "fake_kube.py starts"; finish; exit 1; }
KPORT=$(head -1 "$TMP/kube.port")
kubeconfig() {   # kubeconfig FILE TOKEN
  cat > "$1" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:$KPORT"}}]
users: [{name: u, user: {token: $2}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
YAML
}
kubeconfig "$TMP/a.kubeconfig" s3cret
kubeconfig "$TMP/b.kubeconfig" wrong-token
cat > "$TMP/fleet.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Fleet
metadata: {name: lab-fleet}
spec:
  git: {repo: $TMP/remote.git, branch: main}
  clusters:
  - name: gpu-a
    kubeconfig: $TMP/a.kubeconfig
    namespaces: [lab]
  - name: gpu-b
    git: {folder: clusters/gpu-b}
    kubeconfig: $TMP/b.kubeconfig
    namespaces: [lab]
YAML
cfg=$(write_config fleetstatus "$ROOT/examples/demo/node.yaml" "$TMP/fleet.yaml" "$ROOT/examples/templates/batch-training.yaml")
export GPUAAS_FLEET_RETAIN_MS=1000
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

ctl() { curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$KPORT/_control/$1" -d "${2:-{\}}"; }
remote_file() { git --git-dir="$TMP/remote.git" show "main:$1" >/dev/null 2>&1; }
field_is() { [[ "$(wl_field "$1" "$2")" == "$3" ]]; }
sub() { api POST /api/v1/workloads -H 'Content-Type: application/yaml' --data-binary @- >/dev/null; }
# workload NAME JOB PRIORITY CREATED CONDITIONS [ADMISSION]: the Workload Kueue makes for Job JOB
workload() {
  ctl put "$(jq -n --arg n "$1" --arg j "$2" --argjson p "$3" --arg t "$4" --argjson c "$5" --argjson a "${6:-null}" '
    {resource: "workloads", object: {apiVersion: "kueue.x-k8s.io/v1beta2", kind: "Workload",
      metadata: {name: $n, namespace: "lab", creationTimestamp: $t,
                 ownerReferences: [{apiVersion: "batch/v1", kind: "Job", name: $j, uid: ("uid-" + $j), controller: true}]},
      spec: {queueName: "q", priority: $p, active: true,
             podSets: [{name: "main", count: 1, template: {spec: {containers: [{name: "c", image: "busybox"}]}}}]},
      status: ({conditions: $c} + (if $a == null then {} else {admission: $a} end))}}')"
}
kjob() {   # kjob NAME STATUS: the Job on the cluster
  ctl put "$(jq -n --arg n "$1" --argjson s "$2" '{resource: "jobs", object: {apiVersion: "batch/v1", kind: "Job",
    metadata: {name: $n, namespace: "lab", uid: ("uid-" + $n)}, spec: {suspend: false, template: {spec: {containers: [{name: "c", image: "busybox"}]}}},
    status: $s}}')"
}
T0=2026-12-01T10:00:00Z
PENDING='[{"type":"QuotaReserved","status":"False","reason":"Pending","lastTransitionTime":"2026-12-01T10:00:01Z","message":"couldn'"'"'t assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 1 more needed"}]'

# the cluster's LocalQueue (so positions are counted in its ClusterQueue too)
ctl put '{"resource":"localqueues","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"q","namespace":"lab"},"spec":{"clusterQueue":"team-a"}}}' >/dev/null
# a request for gpu-a, published, then Kueue on the cluster keeps it pending behind another
job train lab q 1 'echo hi' "  annotations: {gpuaas.dev/cluster: gpu-a}" | sub
check "the request is published" until_ok 15 remote_file clusters/gpu-a/lab/job-train.yaml
expect_eq "no status yet: published, waiting" "$(wl_field lab/train .reason)" Published
workload job-blocker-1 blocker 100 2026-12-01T09:00:00Z "$PENDING" >/dev/null
workload job-train-1 train 0 $T0 "$PENDING" >/dev/null
check "pending, as the cluster's Kueue says" until_ok 10 field_is lab/train .phase Pending
expect_match "with Kueue's reason" "$(wl_field lab/train .message)" "insufficient unused quota for nvidia.com/gpu"
expect_eq "its place in its LocalQueue: behind the higher priority" "$(wl_field lab/train .positionInLocalQueue)" 1
expect_eq "and in its ClusterQueue" "$(wl_field lab/train .positionInClusterQueue)" 1
expect_eq "the cluster is named" "$(wl_field lab/train .cluster)" gpu-a
sign_in "$TMP/admin.jar" "$ADMIN_TOKEN" >/dev/null
page=$(curl -s -b "$TMP/admin.jar" "$GPUAAS_SERVER/ui/workloads/lab/train")
expect_match "the portal shows the reason and the cluster" "$page" "gpu-a"
expect_match "and the place in line" "$page" "#2 in line"

# a 410: while the hub is away the blocker goes and the history is compacted; the relist
# drops it, so train moves up
lists0=$(curl -s "http://127.0.0.1:$KPORT/_control/stats" | jq .lists)
ctl hold-watches >/dev/null; ctl break-watches >/dev/null
ctl delete '{"resource":"workloads","namespace":"lab","name":"job-blocker-1"}' >/dev/null
ctl compact >/dev/null; ctl release-watches >/dev/null
check "after the 410's relist, the deleted Workload is gone: train is first" until_ok 15 field_is lab/train .positionInLocalQueue 0
check "the fake saw the relist" test "$(curl -s "http://127.0.0.1:$KPORT/_control/stats" | jq .lists)" -gt "$lists0"

# admitted and running
ADM='{"clusterQueue":"team-a","podSetAssignments":[{"name":"main","count":1,"flavors":{"nvidia.com/gpu":"h100"},"resourceUsage":{"nvidia.com/gpu":"1"}}]}'
workload job-train-1 train 0 $T0 '[{"type":"QuotaReserved","status":"True","reason":"QuotaReserved","message":"Quota reserved in ClusterQueue team-a","lastTransitionTime":"2026-12-01T10:01:00Z"},{"type":"Admitted","status":"True","reason":"Admitted","message":"The workload is admitted","lastTransitionTime":"2026-12-01T10:01:00Z"}]' "$ADM" >/dev/null
kjob train '{"active":1,"startTime":"2026-12-01T10:01:05Z"}' >/dev/null
check "admitted and running on the cluster" until_ok 10 field_is lab/train .phase Running
expect_eq "in its ClusterQueue" "$(wl_field lab/train .admission.clusterQueue)" team-a
expect_eq "no position once admitted" "$(wl_field lab/train .positionInLocalQueue)" null

# a watch that breaks while the Job finishes: resumed from its resourceVersion, nothing lost
ctl hold-watches >/dev/null; ctl break-watches >/dev/null
kjob train '{"succeeded":1,"startTime":"2026-12-01T10:01:05Z","completionTime":"2026-12-01T10:02:00Z","conditions":[{"type":"Complete","status":"True","lastTransitionTime":"2026-12-01T10:02:00Z"}]}' >/dev/null
workload job-train-1 train 0 $T0 '[{"type":"Finished","status":"True","reason":"Succeeded","message":"Job finished successfully","lastTransitionTime":"2026-12-01T10:02:00Z"}]' "$ADM" >/dev/null
ctl release-watches >/dev/null
check "finished, seen after the watch came back" until_ok 15 field_is lab/train .phase Succeeded
expect_eq "its pod's end" "$(wl_field lab/train '.pods[0].state')" Succeeded
# expiry: retained GPUAAS_FLEET_RETAIN_MS (1 s here) after it finished, then removed from git
check "a finished request leaves git (Argo CD prunes the Job; nothing re-creates it)" until_ok 20 bash -c "! git --git-dir='$TMP/remote.git' show main:clusters/gpu-a/lab/job-train.yaml >/dev/null 2>&1"
expect_match "the removal says expired" "$(git --git-dir="$TMP/remote.git" log -1 --format=%B main)" "xpire"
expect_eq "it still shows how it ended" "$(wl_field lab/train .phase)" Succeeded
expect_match "and that its file left git" "$(wl_field lab/train .message)" "xpired.*cluster gpu-a's folder"

# the cluster with a wrong token: not connected, the 401 named, the token never shown
# (the test broke gpu-a's watches above: the hub reconnects after its back-off)
connected() { [[ $(api GET /api/v1/clusters | sed '$d' | jq -r ".items[] | select(.name==\"$1\") | .readBack.connected") == "$2" ]]; }
check "gpu-a's read-back is connected (again)" until_ok 20 connected gpu-a true
cl=$(api GET /api/v1/clusters | sed '$d')
expect_eq "gpu-b's is not" "$(jq -r '.items[] | select(.name=="gpu-b") | .readBack.connected' <<<"$cl")" false
expect_match "and says why" "$(jq -r '.items[] | select(.name=="gpu-b") | .readBack.lastError' <<<"$cl")" "401"
check "the wrong token is never shown" bash -c "! grep -q wrong-token <<<'$cl' && ! grep -q wrong-token '$TMP/serve.log'"
stop_daemon
finish
