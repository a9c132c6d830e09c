#!/usr/bin/env bash
# Installs the Kubernetes-object validator's npm packages (ajv, yaml) into
# tests/k8s/node_modules from package-lock.json. Idempotent: does nothing when they are
# there. Run by tests/integration/objects_out.sh. Test tooling only.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/ajv/package.json && -f node_modules/yaml/package.json ]] &&
   [[ node_modules/.package-lock.json -nt package-lock.json ]]; then
  exit 0
fi
command -v npm >/dev/null || { echo "tests/k8s/install.sh: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
