#!/usr/bin/env bash
# Fleet requests published through git (docs/fleet.md, "Requests"): the real daemon over
# loopback, real git repositories in $TMP with a bare repository as each cluster's
# remote, checked with the git CLI: a REST request for cluster A lands in A's folder
# with its user as author; --cluster B in B's; a portal request for B in B's; cancel is a
# removal commit; concurrent requests all land; a failing push (the remote gone for a
# while) keeps the request (NotYetPublished, shown on the portal) and it lands once the
# remote is back, also across a restart (a hook that rejects pushes is the unit test's,
# tests/unit/test_fleet_gitops.c over git daemon: libgit2 runs no hooks on a local path); an unknown cluster and a namespace it does not offer are refused naming the
# field. Needs the real publisher (src/fleet/publisher.c) for every check on the remotes.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
command -v git >/dev/null || { fail "git is not installed (scripts/install-deps.sh)"; finish; exit 1; }
for c in a b; do
  git init -q --bare -b main "$TMP/remote-$c.git"
  git clone -q "$TMP/remote-$c.git" "$TMP/seed-$c" 2>/dev/null
  (cd "$TMP/seed-$c" && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init && git push -q origin HEAD:main)
done
cat > "$TMP/fleet.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Fleet
metadata: {name: lab-fleet}
spec:
  git: {branch: main}
  clusters:
  - name: gpu-a
    git: {repo: remote-a.git}
    namespaces: [lab]
  - name: gpu-b
    git: {repo: $TMP/remote-b.git}
    namespaces: [lab, other]
YAML
cfg=$(write_config fleetcfg "$ROOT/examples/demo/node.yaml" "$TMP/fleet.yaml" "$ROOT/examples/templates/batch-training.yaml")
export GPUAAS_FLEET_RETAIN_MS=1000
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
tok=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["lab"]}' | sed '$d' | jq -r .token)

# remote_file C PATH: the file at PATH on main of cluster C's remote (fails when absent)
remote_file() { git --git-dir="$TMP/remote-$1.git" show "main:$2" 2>/dev/null; }
remote_log() { git --git-dir="$TMP/remote-$1.git" log -1 --format="$2" main -- "$3" 2>/dev/null; }
fleet_job() {   # fleet_job NAME [CLUSTER]: a Job for lab, annotated for CLUSTER when given
  job "$1" lab q 0 'echo hi' "${2:+  annotations: {gpuaas.dev/cluster: $2\}}"
}
sub() { curl -s -w '\n%{http_code}' -H "Authorization: Bearer $tok" -H 'Content-Type: application/yaml' --data-binary @- "$GPUAAS_SERVER/api/v1/workloads$1"; }

# REST, cluster A
r=$(fleet_job one gpu-a | sub "")
expect_eq "REST request for gpu-a is accepted at once" "$(status_of "$r")" 201
expect_eq "its view names the cluster" "$(body_of "$r" | jq -r '.items[0].cluster')" gpu-a
expect_eq "and says it is not yet published" "$(body_of "$r" | jq -r '.items[0].reason')" NotYetPublished
check "it lands in gpu-a's folder" until_ok 10 remote_file a clusters/gpu-a/lab/job-one.yaml
expect_eq "authored by its user" "$(remote_log a '%an <%ae>' clusters/gpu-a/lab/job-one.yaml)" "alice <alice@gpuaas.invalid>"
expect_match "the message says what and by whom" "$(remote_log a %s clusters/gpu-a/lab/job-one.yaml)" "^Request Job lab/one for cluster gpu-a by alice$"
check "the view says Published" until_ok 5 eval '[[ $(TOKEN=$tok wl_field lab/one .publish.state) == Published ]]'
expect_match "before any status: waiting or no read-back" "$(TOKEN=$tok wl_field lab/one .message)" "published to cluster gpu-a as commit"
expect_match "the file is a suspended Job" "$(remote_file a clusters/gpu-a/lab/job-one.yaml)" "suspend"

# CLI --cluster B
fleet_job two > "$TMP/two.yaml"
GPUAAS_TOKEN=$tok "$G" submit -f "$TMP/two.yaml" --cluster gpu-b >/dev/null
check "CLI --cluster gpu-b lands in B's folder" until_ok 10 remote_file b clusters/gpu-b/lab/job-two.yaml
check "not in A's" eval '! remote_file a clusters/gpu-b/lab/job-two.yaml'
expect_match "gpuaas clusters lists both" "$(GPUAAS_TOKEN=$tok "$G" clusters)" "gpu-a.*"$'\n'".*gpu-b"
expect_match "gpuaas ls has a CLUSTER column" "$(GPUAAS_TOKEN=$tok "$G" ls)" "NAMESPACE +NAME +CLUSTER +QUEUE.*"$'\n'".*two +gpu-b"
expect_eq "gpuaas ls -o json shows the cluster" "$(GPUAAS_TOKEN=$tok "$G" ls -o json | jq -r '.items[] | select(.name=="two") | .cluster')" gpu-b

# the portal: the Cluster choice of a template's form, a browser's form POST
jar=$TMP/jar
sign_in "$jar" "$tok" >/dev/null
form=$(curl -s -b "$jar" "$GPUAAS_SERVER/ui/new/batch-training")
expect_match "the form offers the clusters" "$form" 'name="_cluster".*value="gpu-b"'
csrf=$(grep -o 'name="_csrf" value="[^"]*"' <<<"$form" | head -1 | sed 's/.*value="//; s/"$//')
to=$(curl -s -o /dev/null -w '%{redirect_url}' -b "$jar" -d "_csrf=$csrf" -d namespace=lab -d queue=q -d gpus=1 -d steps=1 \
  -d stepSeconds=1 -d priority=low -d hours=1 -d _cluster=gpu-b -d action=submit "$GPUAAS_SERVER/ui/new/batch-training")
expect_match "the portal request is accepted" "$to" "/ui/workloads/lab/train-"
pname=${to##*/}
check "it lands in B's folder" until_ok 10 remote_file b "clusters/gpu-b/lab/job-$pname.yaml"
expect_match "its page names the cluster" "$(curl -s -b "$jar" "$GPUAAS_SERVER/ui/workloads/lab/$pname")" "cluster gpu-b"

# cancel: a removal commit
r=$(TOKEN=$tok api POST /api/v1/workloads/lab/one/cancel)
expect_eq "cancel is accepted" "$(status_of "$r")" 200
check "cancel removes the file" until_ok 10 eval '! remote_file a clusters/gpu-a/lab/job-one.yaml'
expect_match "with a cancel message" "$(git --git-dir="$TMP/remote-a.git" log -1 --format=%s main)" "^Cancel Job lab/one on cluster gpu-a by alice$"
check "the view says Removed" until_ok 5 eval '[[ $(TOKEN=$tok wl_field lab/one .publish.state) == Removed ]]'
r=$(TOKEN=$tok api DELETE /api/v1/workloads/lab/one)
expect_eq "a removed request can be deleted" "$(status_of "$r")" 200

# ten at once
pids=()
for i in $(seq 1 10); do (fleet_job "many-$i" gpu-a | sub "" >/dev/null) & pids+=($!); done
wait "${pids[@]}"
count_a() { git --git-dir="$TMP/remote-a.git" ls-tree --name-only main clusters/gpu-a/lab/ 2>/dev/null | grep -c many-; }
check "10 concurrent requests all land" until_ok 20 eval '[[ $(count_a) == 10 ]]'

# a failing push: kept, shown, and published once the remote is back (also across a restart)
mv "$TMP/remote-b.git" "$TMP/remote-b.away"
fleet_job held gpu-b | sub "" >/dev/null
check "a failing push says NotYetPublished" until_ok 10 eval '[[ $(TOKEN=$tok wl_field lab/held .publish.attempts) -ge 1 ]]'
expect_eq "reason NotYetPublished" "$(TOKEN=$tok wl_field lab/held .reason)" NotYetPublished
expect_match "the message names the cluster and the next try" "$(TOKEN=$tok wl_field lab/held .message)" "not yet published to cluster gpu-b: .*; next try in [0-9]+s"
page=$(curl -s -b "$jar" "$GPUAAS_SERVER/ui/workloads/lab/held")
expect_match "the portal page says not yet published" "$page" "not yet published"
expect_match "/metrics counts the failures" "$(curl -s "$GPUAAS_SERVER/metrics" -H "Authorization: Bearer $GPUAAS_TOKEN")" 'gpuaas_fleet_publish_failures_total\{cluster="gpu-b"\} [1-9]'
if command -v promtool >/dev/null; then
  check "promtool finds the fleet's metrics clean" eval 'curl -s -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER/metrics" | grep gpuaas_fleet_ | promtool check metrics'
fi
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "still kept after a restart" "$(TOKEN=$tok wl_field lab/held .publish.state)" Pending
mv "$TMP/remote-b.away" "$TMP/remote-b.git"
check "it lands without a new request" until_ok 20 remote_file b clusters/gpu-b/lab/job-held.yaml

# expiry: a Job with a maximum execution time and no read-back leaves git after it
job brief lab q 0 'true' "    kueue.x-k8s.io/max-exec-time-seconds: \"1\"
  annotations: {gpuaas.dev/cluster: gpu-a}" | sub "" >/dev/null
check "the short Job lands" until_ok 10 remote_file a clusters/gpu-a/lab/job-brief.yaml
check "and expires: its file is removed" until_ok 15 eval '! remote_file a clusters/gpu-a/lab/job-brief.yaml'
expect_match "the removal says expired" "$(git --git-dir="$TMP/remote-a.git" log -1 --format=%s main)" "expired"

# refusals name the field
r=$(fleet_job nowhere gpu-z | sub "")
expect_eq "unknown cluster is 422" "$(status_of "$r")" 422
expect_match "naming metadata.annotations" "$(body_of "$r")" "metadata.annotations"
r=$(job other other q 0 'true' "  annotations: {gpuaas.dev/cluster: gpu-a}" | curl -s -w '\n%{http_code}' -H "Authorization: Bearer $GPUAAS_TOKEN" -H 'Content-Type: application/yaml' --data-binary @- "$GPUAAS_SERVER/api/v1/workloads")
expect_eq "a namespace the cluster does not offer is 422" "$(status_of "$r")" 422
expect_match "naming metadata.namespace" "$(body_of "$r")" "metadata.namespace"
r=$(fleet_job two gpu-a | sub "")
expect_eq "a name already taken is 409" "$(status_of "$r")" 409
finish
