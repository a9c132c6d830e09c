#!/usr/bin/env bash
# Installs the Kubernetes-object validators' npm packages (ajv, yaml for validate.mjs;
# kubernetes-models and @kubernetes-models/argo-cd for validate_models.mjs) into
# tests/k8s/node_modules from package-lock.json. Idempotent: does nothing when they are
# there. Run by tests/integration/objects_out.sh and fleet_models.sh. Test tooling only.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/ajv/package.json && -f node_modules/yaml/package.json &&
      -f node_modules/kubernetes-models/package.json &&
      -f node_modules/@kubernetes-models/argo-cd/package.json ]] &&
   [[ node_modules/.package-lock.json -nt package-lock.json ]]; then
  exit 0
fi
command -v npm >/dev/null || { echo "tests/k8s/install.sh: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
