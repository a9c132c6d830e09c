#!/usr/bin/env bash
# Installs the portal tests' npm packages (playwright-core, from package-lock.json) into
# tests/portal/node_modules. Idempotent: does nothing when they are already there.
# No browser is downloaded: the tests drive Debian's /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/playwright-core/package.json ]] &&
   [[ node_modules/.package-lock.json -nt package-lock.json ]]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "tests/portal/install.sh: npm is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
# --ignore-scripts: playwright-core has no install step we need, and nothing is fetched but the package
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
