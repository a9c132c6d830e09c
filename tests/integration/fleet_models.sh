#!/usr/bin/env bash
# The fleet's non-Kueue objects validate as Kubernetes (and Argo CD) read them: the GPU
# Operator ConfigMaps, the labelled Nodes and the rendered Jobs, written by the unit tests
# of the renderers (tests/unit/test_fleet_render2.c, with GPUAAS_RENDER_OUT set), and
# examples/fleet/argocd/applicationset.yaml, validated with the @kubernetes-models npm
# packages (tests/k8s/validate_models.mjs); examples/fleet/queues.yaml against Kueue's
# CRDs (validate.mjs). Mutated objects must fail validation, and a second render gives
# the same bytes. (Until `gpuaas render` is merged the renderers are driven through the
# unit-test binary; the InferenceService has no @kubernetes-models package and is
# checked by the unit tests only.)
source "$(dirname "$0")/lib.sh"
K8S=$ROOT/tests/k8s
UNIT=${GPUAAS_UNIT:-$(dirname "$GPUAAS_BIN")/test-unit}
if ! "$K8S/install.sh"; then fail "npm install of the validators (tests/k8s/install.sh)"; finish; exit 1; fi
if [[ ! -x "$UNIT" ]]; then fail "no unit-test binary at $UNIT (make build/test-unit, or set GPUAAS_UNIT)"; finish; exit 1; fi

render() {  # render DIR: the renderers' objects into DIR
  mkdir -p "$1" && (cd "$ROOT" && GPUAAS_RENDER_OUT=$1 "$UNIT" --filter 'fleet_render2/*' --jobs 1)
}
check "the renderers' unit tests pass and write their objects" render "$TMP/out"
models=$(find "$TMP/out" -name '*.yaml' ! -name 'isvc-*' | sort)
n=$(wc -l <<<"$models")
((n >= 10)) && ok "objects rendered ($n)" || fail "objects rendered: only $n"
out=$(cd "$K8S" && node validate_models.mjs $models 2>&1); rc=$?
expect_eq "every rendered Job, ConfigMap and Node validates" "$rc" 0
[[ $rc -ne 0 ]] && echo "$out"
expect_eq "one valid line per object" "$(grep -c '^valid ' <<<"$out")" "$n"
for kind in Job ConfigMap Node; do
  grep -q "^valid $kind " <<<"$out" && ok "a $kind among them" || fail "no $kind validated"
done
out=$(cd "$K8S" && node validate_models.mjs "$ROOT/examples/fleet/argocd/applicationset.yaml" 2>&1)
expect_eq "the example ApplicationSet validates" "$out" "valid ApplicationSet gpuaas-clusters"
check "the example queues validate against Kueue's CRDs" node "$K8S/validate.mjs" "$ROOT/examples/fleet/queues.yaml"

# tests that can fail: each mutation breaks one object, which must be refused
job=$(find "$TMP/out" -name 'job-gpu-a-*.yaml' | head -1)
cm=$(find "$TMP/out" -name 'cm-gpu-a-*.yaml' | head -1)
node=$(find "$TMP/out" -name 'node-gpu-a-*.yaml' | head -1)
# mutate NAME SOURCE SED: SOURCE with one change, which must make it invalid
mutate() {
  sed "$3" "$2" > "$TMP/$1.yaml"
  if cmp -s "$TMP/$1.yaml" "$2"; then fail "$1: the mutation changed nothing"; return; fi
  local out rc
  out=$(cd "$K8S" && node validate_models.mjs "$TMP/$1.yaml" 2>&1); rc=$?
  if [[ $rc -ne 0 && "$out" == INVALID* ]]; then ok "$1 is refused: ${out#INVALID }"; else fail "$1 passed validation: $out"; fi
}
mutate bad-job "$job" 's/suspend: true/suspend: "yes"/'
mutate bad-cm "$cm" 's/^  ts: .*/  ts: 4/'
mutate bad-node "$node" 's/nvidia.com\/device-plugin.config: ts/nvidia.com\/device-plugin.config: [ts]/'
mutate bad-appset "$ROOT/examples/fleet/argocd/applicationset.yaml" 's/goTemplate: true/goTemplate: "yes"/'

check "a second render gives the same bytes" render "$TMP/again"
check "no diff between the two renders" diff -r "$TMP/out" "$TMP/again"
finish
