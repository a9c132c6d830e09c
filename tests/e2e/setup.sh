#!/usr/bin/env bash
# Installs the end-to-end tests' npm packages (the official openai client) into
# tests/e2e/node_modules from package-lock.json. Idempotent and fast when present;
# run by the e2e integration test (so by `make test`). Test tooling only.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/openai/package.json ]] && \
   [[ "$(node -p 'require("./node_modules/openai/package.json").version')" == \
      "$(node -p 'require("./package-lock.json").packages["node_modules/openai"].version')" ]]; then
  exit 0
fi
command -v npm >/dev/null || { echo "e2e: npm is missing (scripts/install-deps.sh installs nodejs and npm)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
