#!/usr/bin/env bash
# Every mistake a user can make gets a 4xx with a JSON error naming the field (and
# the YAML line), the CLI prints it plainly and exits non-zero, and nothing is half
# applied.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
MAX_BODY=65536
cfg=$(write_config bad "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

# post FILE PATH -> sets CODE and BODY
post() { local out; out=$(api POST "$2" -H 'Content-Type: application/yaml' --data-binary @"$1"); CODE=$(status_of "$out"); BODY=$(body_of "$out"); }
err() { jq -r ".error.$1 // empty" <<<"$BODY"; }

# 1. malformed YAML: 400 with the line
printf 'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\n  labels: [unclosed\n' > "$TMP/malformed.yaml"
post "$TMP/malformed.yaml" /api/v1/workloads
expect_eq "malformed YAML is 400" "$CODE" 400
expect_match "malformed YAML names a line" "$(err line)" '^[0-9]+$'
out=$("$G" submit -f "$TMP/malformed.yaml" 2>&1); rc=$?
expect_eq "CLI exits 1 on a bad file" "$rc" 1
expect_match "CLI prints file:line" "$out" "malformed.yaml:[0-9]+"

# 2. unknown kind in apply: 400 naming kind
printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQeue\nmetadata: {name: x}\n' > "$TMP/kind.yaml"
post "$TMP/kind.yaml" /api/v1/apply
expect_eq "unknown kind is 400" "$CODE" 400
expect_eq "unknown kind names the field" "$(err field)" kind
expect_match "unknown kind lists the known ones" "$(err message)" "ClusterQueue"

# 3. unknown queue / priority class: 422 naming the label, with its line
job q1 team-a nosuchqueue 0 'true' > "$TMP/noqueue.yaml"
post "$TMP/noqueue.yaml" /api/v1/workloads
expect_eq "unknown queue is 422" "$CODE" 422
expect_match "unknown queue names the label" "$(err field)" "kueue.x-k8s.io/queue-name"
expect_eq "unknown queue gives the line" "$(err line)" 7
job q2 team-a main 0 'true' '    kueue.x-k8s.io/priority-class: nosuchclass' > "$TMP/noprio.yaml"
post "$TMP/noprio.yaml" /api/v1/workloads
expect_eq "unknown priority class is 422" "$CODE" 422
expect_match "unknown priority class names the label" "$(err field)" "priority-class"

# 4. quantities: negative, unparsable
job q3 team-a main '-1' 'true' > "$TMP/neg.yaml"
post "$TMP/neg.yaml" /api/v1/workloads
expect_eq "negative quantity is 422" "$CODE" 422
expect_match "negative quantity names the field" "$(err field)" 'requests.*nvidia.com/gpu'
job q4 team-a main '2x' 'true' > "$TMP/unparsable.yaml"
post "$TMP/unparsable.yaml" /api/v1/workloads
expect_eq "unparsable quantity is 422" "$CODE" 422
expect_match "unparsable quantity says so" "$(err message)" '2x'

# 5. a resource no flavor covers
job q5 team-a main 0 'true' | sed 's#nvidia.com/gpu: "0"#example.com/fpga: "1"#' > "$TMP/fpga.yaml"
post "$TMP/fpga.yaml" /api/v1/workloads
expect_eq "uncovered resource is 422" "$CODE" 422
expect_match "uncovered resource is named" "$(err message)$(err field)" 'example.com/fpga'

# 6. oversized body: 413
{ job big team-a main 0 'true'; printf '# %070000d\n' 0; } > "$TMP/big.yaml"
post "$TMP/big.yaml" /api/v1/workloads
expect_eq "oversized body is 413" "$CODE" 413
expect_match "oversized body names the limit" "$(err message)" "maxBodyBytes"

# 7. duplicate name: 409
job dup team-a main 0 'sleep 5' > "$TMP/dup.yaml"
post "$TMP/dup.yaml" /api/v1/workloads
expect_eq "first submit is 201" "$CODE" 201
post "$TMP/dup.yaml" /api/v1/workloads
expect_eq "duplicate is 409" "$CODE" 409
out=$("$G" submit -f "$TMP/dup.yaml" 2>&1); rc=$?
expect_eq "CLI exits 1 on a duplicate" "$rc" 1
expect_match "CLI says it exists" "$out" "already exists"

# 8. no command (local mode runs processes)
job nocmd team-a main 0 'true' | grep -v 'command:' > "$TMP/nocmd.yaml"
post "$TMP/nocmd.yaml" /api/v1/workloads
expect_eq "missing command is 422" "$CODE" 422
expect_match "missing command explains local mode" "$(err message)" "local mode"

# 9. apply is all or nothing: a bad ClusterQueue after a good flavor applies neither
cat > "$TMP/half.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: brand-new}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: brand-new
      resources:
      - name: cpu
        nominalQuota: "-4"
YAML
post "$TMP/half.yaml" /api/v1/apply
expect_eq "bad ClusterQueue is 422" "$CODE" 422
expect_eq "error points at document 1" "$(err document)" 1
expect_eq "error points at the quota's line" "$(err line)" 16
expect_match "error names the field" "$(err field)" "nominalQuota"
expect_eq "the good flavor was not applied" "$(status_of "$(api GET /api/v1/resourceflavors/brand-new)")" 404
out=$("$G" apply -f "$TMP/half.yaml" 2>&1); rc=$?
expect_eq "CLI apply exits 1" "$rc" 1
expect_match "CLI apply prints file:line: field" "$out" "half.yaml:16.*nominalQuota"

# 10. wrong method, unknown path, JSON body that is not JSON
expect_eq "unknown path is 404" "$(status_of "$(api GET /api/v1/nonsense)")" 404
expect_eq "wrong method is 405" "$(status_of "$(api PUT /api/v1/workloads)")" 405
# every 405 says which methods the path answers (Allow, RFC 9110), so that a client can
# tell a wrong method from a wrong path: METHOD PATH ALLOW
while read -r m p want; do
  allow=$(curl -s -o /dev/null -D - -X "$m" -H "Authorization: Bearer $GPUAAS_TOKEN" "$GPUAAS_SERVER$p" |
    tr -d '\r' | awk 'tolower($1)=="allow:"{ $1=""; sub(/^ /,""); print }')
  expect_eq "405 on $m $p carries Allow: ${want//,/, }" "$allow" "${want//,/, }"
done <<'ROWS'
PUT /api/v1/workloads GET,POST
PATCH /api/v1/workloads/team-a/dup GET,DELETE
GET /api/v1/workloads/team-a/dup/cancel POST
DELETE /api/v1/apply POST
PUT /api/v1/clusterqueues GET
PUT /api/v1/clusterqueues/cq GET,DELETE
POST /api/v1/gpus GET
GET /api/v1/gpus/mig POST
PUT /api/v1/users GET,POST
POST /api/v1/whoami GET
POST /healthz GET,HEAD
PUT / GET,HEAD,POST
POST /assets/portal.js GET,HEAD
DELETE /v1/chat/completions POST
ROWS
out=$(api POST /api/v1/workloads -H 'Content-Type: application/json' --data '{"kind": "Job",')
expect_eq "broken JSON is 400" "$(status_of "$out")" 400
expect_eq "a Job posted to apply is refused" "$(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/dup.yaml")")" 422
finish
