#!/usr/bin/env bash
# Names and keys are refused at the edge, in Kubernetes' words, and nothing is cut:
#   - traversal names (../team-b/victim, ../../.., a/b) are 422 with the RFC 1123 message,
#     and nothing is written under DATA/logs outside the submitter's namespace, nor outside
#     the data directory;
#   - a Job name of 64 characters is refused, 63 runs; a 300-character key (long namespace,
#     long Workload name) is refused with a clear error, never admitted as 201 {"items":[]};
#   - metadata.generateName works as in Kubernetes: Kueue's sample-job shape submitted twice
#     gets two names, both run to completion and answer GET, cancel and DELETE; the CLI
#     prints the name given;
#   - deleting a user on the portal's Admin page (its form, its CSRF token) revokes that
#     user's gateway API key, as DELETE /api/v1/users/NAME does.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config names "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
DATA=$TMP/data
LABEL_MSG="a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)

# post TOKEN FILE -> CODE and BODY of POST /api/v1/workloads
post() { local out; out=$(TOKEN=$1 api POST /api/v1/workloads -H 'Content-Type: application/yaml' --data-binary @"$2"); CODE=$(status_of "$out"); BODY=$(body_of "$out"); }
err() { jq -r ".error.$1 // empty" <<<"$BODY"; }
rep() { printf "%${2}s" "" | tr ' ' "$1"; }

# ---- traversal names --------------------------------------------------------------------
i=0
for bad in '../team-b/victim' '../../..' 'a/b'; do
  i=$((i + 1))
  job "$bad" team-a main 0 'echo escaped > escaped.txt; echo written' | sed "s#name: $bad#name: \"$bad\"#" > "$TMP/bad$i.yaml"
  post "$ALICE" "$TMP/bad$i.yaml"
  expect_eq "name $bad is refused with 422" "$CODE" 422
  expect_eq "... on metadata.name" "$(err field)" metadata.name
  expect_eq "... in Kubernetes' words" "$(err message)" "Invalid value: \"$bad\": $LABEL_MSG"
done
# refused before anything is recorded: no pod can have started (so no wait is needed here)
expect_eq "no workload was recorded" "$(api GET /api/v1/workloads | sed '$d' | jq '.items | length')" 0
expect_eq "nothing under DATA/logs outside team-a" "$(find "$DATA/logs" -mindepth 1 -maxdepth 1 ! -name team-a | wc -l)" 0
expect_eq "nothing written outside the data directory" "$(find "$TMP" -maxdepth 2 \( -name 'pod-*.log' -o -name escaped.txt \) | wc -l)" 0
out=$("$G" submit -f "$TMP/bad3.yaml" 2>&1); rc=$?
expect_eq "the CLI exits 1 on a bad name" "$rc" 1
expect_match "... and prints the field and Kubernetes' message" "$out" 'metadata.name: Invalid value: "a/b": a lowercase RFC 1123 label'

# ---- Job names: 63 runs, 64 is refused ------------------------------------------------
n63=$(rep j 63)
job "$n63" team-a main 0 'echo sixty-three' > "$TMP/n63.yaml"
post "$ALICE" "$TMP/n63.yaml"
expect_eq "a 63-character Job name is accepted" "$CODE" 201
expect_eq "... under its own name" "$(jq -r '.items[0].name' <<<"$BODY")" "$n63"
check "... and runs" wait_phase "team-a/$n63" Succeeded 20
expect_eq "... with its log in DATA/logs/team-a/NAME" "$(cat "$DATA/logs/team-a/$n63/pod-0.log" 2>/dev/null)" sixty-three
job "$(rep j 64)" team-a main 0 'true' > "$TMP/n64.yaml"
post "$ALICE" "$TMP/n64.yaml"
expect_eq "a 64-character Job name is refused" "$CODE" 422
expect_match "... with Kubernetes' length message" "$(err field): $(err message)" '^metadata.name: Invalid value: "j+": must be no more than 63 characters$'

# ---- 300-character keys ----------------------------------------------------------------
job short "$(rep n 294)" main 0 'true' > "$TMP/longns.yaml"
post "$ADMIN_TOKEN" "$TMP/longns.yaml"
expect_eq "a 300-character key (294-character namespace) is refused" "$CODE" 422
expect_eq "... naming metadata.namespace" "$(err field)" metadata.namespace
expect_match "... must be no more than 63 characters" "$(err message)" 'must be no more than 63 characters$'
long=$(rep w 63).$(rep w 63).$(rep w 63).$(rep w 63).$(rep w 37)   # a 293-character subdomain
cat > "$TMP/longwl.yaml" <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: $long, namespace: team-a}
spec:
  queueName: main
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: busybox, command: ["true"], resources: {requests: {cpu: "1"}}}
YAML
post "$ALICE" "$TMP/longwl.yaml"
expect_eq "a 300-character key (team-a/ and a Workload name of 293) is refused" "$CODE" 422
expect_match "... with the subdomain length message" "$(err field): $(err message)" '^metadata.name: Invalid value: "w+\.w+\.\.\.": must be no more than 253 characters$'
expect_eq "... and never recorded (one workload: the 63-character one)" "$(api GET /api/v1/workloads | sed '$d' | jq '.items | length')" 1
expect_eq "a URL naming a 300-character key is a clear 404" \
  "$(status_of "$(api GET "/api/v1/workloads/team-a/$(rep x 293)")")" 404

# ---- generateName: Kueue's sample-job shape ----------------------------------------------
# tests/scenarios/kueue-examples/sample-job.yaml, in the demo's queue and with a command
# (local mode runs processes)
sed -e 's/namespace: default/namespace: team-a/' -e 's/queue-name: user-queue/queue-name: main/' \
    -e 's#^\( *\)args: \(.*\)#\1command: ["sh", "-c", "sleep 0.3; echo done"]\n\1args: \2#' \
    "$ROOT/tests/scenarios/kueue-examples/sample-job.yaml" > "$TMP/sample-job.yaml"
check "the sample Job uses generateName" grep -q 'generateName: sample-job-' "$TMP/sample-job.yaml"
post "$ALICE" "$TMP/sample-job.yaml"
expect_eq "submit with generateName is 201" "$CODE" 201
N1=$(jq -r '.items[0].name' <<<"$BODY")
expect_match "... the answer carries the name given" "$N1" '^sample-job-[bcdfghjklmnpqrstvwxz2456789]{5}$'
out=$(GPUAAS_TOKEN=$ALICE "$G" submit -f "$TMP/sample-job.yaml" 2>&1)
expect_match "the CLI prints the name given" "$out" '^workload team-a/sample-job-[bcdfghjklmnpqrstvwxz2456789]{5} submitted'
N2=$(sed -E 's#^workload team-a/([^ ]+) submitted.*#\1#' <<<"$out")
check "two submits, two names" test "$N1" != "$N2"
for n in "$N1" "$N2"; do
  check "$n runs to completion" wait_phase "team-a/$n" Succeeded 20
  expect_eq "GET $n" "$(TOKEN=$ALICE api GET "/api/v1/workloads/team-a/$n" | sed '$d' | jq -r .name)" "$n"
  expect_eq "its 3 pods logged" "$(cat "$DATA/logs/team-a/$n"/pod-*.log | grep -c done)" 3
  expect_eq "DELETE $n" "$(status_of "$(TOKEN=$ALICE api DELETE "/api/v1/workloads/team-a/$n")")" 200
  expect_eq "... then it is gone" "$(status_of "$(TOKEN=$ALICE api GET "/api/v1/workloads/team-a/$n")")" 404
done
sed 's/sleep 0.3/sleep 30/' "$TMP/sample-job.yaml" > "$TMP/sample-long.yaml"
post "$ALICE" "$TMP/sample-long.yaml"
N3=$(jq -r '.items[0].name' <<<"$BODY")
check "a third one starts" wait_phase "team-a/$N3" Running 20
expect_eq "cancel it by its generated name" "$(status_of "$(TOKEN=$ALICE api POST "/api/v1/workloads/team-a/$N3/cancel")")" 200
check "... it stops" wait_phase "team-a/$N3" Deactivated 20
expect_eq "... and is deleted" "$(status_of "$(TOKEN=$ALICE api DELETE "/api/v1/workloads/team-a/$N3")")" 200
sed '/generateName/d' "$TMP/sample-job.yaml" > "$TMP/noname.yaml"
post "$ALICE" "$TMP/noname.yaml"
expect_eq "neither name nor generateName: 422" "$CODE" 422
expect_eq "... Kubernetes' Required message" "$(err field): $(err message)" \
  "metadata.name: Required value: name or generateName is required"

# ---- the portal's user delete revokes the user's gateway key ------------------------------
cat > "$TMP/gw.yaml" <<'YAML'
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 60}, namespaces: [team-a]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: m}
spec: {servedNames: [m], tiers: [open], url: "http://127.0.0.1:9/v1"}
YAML
expect_eq "a tier and a model" "$(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/gw.yaml")")" 200
BOB=$(api POST /api/v1/users -d '{"name":"bob","namespaces":["team-a"]}' | sed '$d' | jq -r .token)
KEY=$(TOKEN=$BOB api POST /api/v1/keys -d '{"name":"k","tier":"open"}' | sed '$d' | jq -r .key)
models() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$GPUAAS_SERVER/v1/models"; }
expect_eq "bob's key lists the models" "$(models "$KEY")" 200
jar=$TMP/admin.jar
login=$(curl -s -c "$jar" -b "$jar" "$GPUAAS_SERVER/login" | grep -o 'name="_login" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
curl -s -o /dev/null -c "$jar" -b "$jar" --data-urlencode "_login=$login" --data-urlencode "token=$ADMIN_TOKEN" "$GPUAAS_SERVER/login"
admin_page=$(curl -s -b "$jar" -c "$jar" "$GPUAAS_SERVER/ui/admin")
CSRF=$(grep -o 'name="csrf-token" content="[^"]*"' <<<"$admin_page" | sed 's/.*content="//; s/"$//')
check "the Admin page offers to delete bob" grep -q 'action="/ui/admin/delete".*name="user" value="bob"' <<<"$admin_page"
code=$(curl -s -o "$TMP/del.html" -w '%{http_code}' -b "$jar" -c "$jar" --data-urlencode "_csrf=$CSRF" \
         --data-urlencode "user=bob" "$GPUAAS_SERVER/ui/admin/delete")
expect_eq "the admin deletes bob on the Admin page" "$code" 200
check "... which says so" grep -q 'User bob deleted' "$TMP/del.html"
expect_eq "bob's gateway key is refused at once (401)" "$(models "$KEY")" 401
expect_eq "... and his API token too" "$(status_of "$(TOKEN=$BOB api GET /api/v1/whoami)")" 401
finish
