#!/usr/bin/env bash
# Kueue objects are never silently dropped: an unknown field is refused with its path
# and nothing is applied; a field gpuaas knows but does not implement is applied with a
# warning (body, Warning header, `gpuaas apply` on stderr); Kueue's own sample manifests
# apply without a warning; the CRD field table is what the generator makes of the CRDs.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config strict "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

post() { local out; out=$(api POST /api/v1/apply -D "$TMP/headers" -H 'Content-Type: application/yaml' --data-binary @"$1");
         CODE=$(status_of "$out"); BODY=$(body_of "$out"); }

# 1. spec.bogusField: 4xx naming it, nothing applied (the flavor in the same file neither)
cat > "$TMP/bogus.yaml" <<'Y'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: strict-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: strict-cq}
spec:
  namespaceSelector: {}
  bogusField: 1
Y
post "$TMP/bogus.yaml"
expect_eq "an unknown field is 400" "$CODE" 400
expect_eq "it names the field" "$(jq -r .error.field <<<"$BODY")" spec.bogusField
expect_eq "in kubectl's words" "$(jq -r .error.message <<<"$BODY")" 'unknown field "spec.bogusField"'
expect_eq "it gives the line" "$(jq -r .error.line <<<"$BODY")" 10
expect_eq "the queue is not applied" "$(status_of "$(api GET /api/v1/clusterqueues/strict-cq)")" 404
expect_eq "the flavor is not applied" "$(status_of "$(api GET /api/v1/resourceflavors/strict-flavor)")" 404
out=$("$G" apply -f "$TMP/bogus.yaml" 2>&1); rc=$?
expect_eq "CLI apply exits 1" "$rc" 1
expect_match "CLI names file, line and field" "$out" 'bogus.yaml:10.*spec.bogusField.*unknown field'

# 2. a pattern the CRD states: cohortName must be a DNS-1123 subdomain
printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: strict-cq}\nspec: {cohortName: Lab_1}\n' > "$TMP/lab.yaml"
post "$TMP/lab.yaml"
expect_eq "cohortName Lab_1 is 422" "$CODE" 422
expect_eq "it names spec.cohortName" "$(jq -r .error.field <<<"$BODY")" spec.cohortName

# 3. admissionScope: applied, with a warning in the body, a header and on the CLI's stderr
cat > "$TMP/scope.yaml" <<'Y'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: strict-cq}
spec:
  namespaceSelector: {}
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
Y
want='ClusterQueue strict-cq: spec.admissionScope is not implemented by gpuaas and has no effect'
post "$TMP/scope.yaml"
expect_eq "a known, unimplemented field is applied (200)" "$CODE" 200
expect_eq "the answer carries the warning" "$(jq -r '.warnings[0]' <<<"$BODY")" "$want"
expect_match "and a Warning: 299 header" "$(tr -d '\r' <"$TMP/headers")" "Warning: 299 - \"$want\""
expect_eq "the queue exists" "$(status_of "$(api GET /api/v1/clusterqueues/strict-cq)")" 200
"$G" apply -f "$TMP/scope.yaml" >"$TMP/out" 2>"$TMP/err"; rc=$?
expect_eq "CLI apply exits 0" "$rc" 0
expect_eq "CLI prints the warning on stderr" "$(cat "$TMP/err")" "Warning: $want"
expect_match "CLI still says what it did on stdout" "$(cat "$TMP/out")" "ClusterQueue strict-cq unchanged"

# 4. Kueue's own sample manifests (the v1beta2 one: the others are v1beta1, which apply
# refuses as deprecated; the scenario runner and the unit tests load them) and the
# examples apply without a warning
for f in "$ROOT/tests/scenarios/kueue-examples/quick-start-setup.yaml" "$ROOT/examples/demo/queues.yaml"; do
    "$G" apply -f "$f" >"$TMP/out" 2>"$TMP/err"; rc=$?
    expect_eq "$(basename "$f") applies" "$rc" 0
    expect_eq "$(basename "$f") applies without a warning" "$(cat "$TMP/err")" ""
done

# 5. the committed field table is what the generator makes of the CRDs
# (the CRDs are test data in the repository, tests/k8s/crds; python3-yaml comes with install-deps)
if ! python3 -c 'import yaml' 2>/dev/null; then fail "python3-yaml is missing (scripts/install-deps.sh installs it)"
elif python3 "$ROOT/scripts/gen-kueue-schema.py" "$ROOT/tests/k8s/crds" | cmp -s - "$ROOT/src/core/kueue_schema_table.c"
then ok "kueue_schema_table.c is up to date with the CRDs"
else fail "kueue_schema_table.c differs from scripts/gen-kueue-schema.py's output"; fi
finish
