#!/usr/bin/env bash
# Installs exactly the Debian packages gpuaas needs to build, test and run.
# Idempotent: when everything is present it only asks dpkg (well under a second).
# Usage: scripts/install-deps.sh [--check]   (--check: list what is missing, exit 1 if any)
set -euo pipefail

PKGS=(
  build-essential pkg-config clang
  libclang-rt-14-dev          # clang's sanitizer and libFuzzer runtimes (make asan, make fuzz): only recommended by clang
  libcurl4-openssl-dev libjansson-dev libyaml-dev
  libsqlite3-dev libsodium-dev libcriterion-dev
  curl procps jq
  bubblewrap                  # the pod sandbox (docs/security.md)
  chromium nodejs npm
  sqlite3 nginx-light wrk     # gateway: tests read usage records; bench/gateway.sh's reference proxy and load tool
  prometheus                  # promtool: tests/integration/metrics_lint.sh lints /metrics (docs/operations.md)
  python3-yaml                # scripts/gen-kueue-schema.py (kueue_strict.sh checks the committed table against it)
  libgit2-dev git             # fleet: the publisher commits and pushes with libgit2; its tests and fleet_gitops.sh inspect with git (and git daemon)
  openssl                     # tests/unit/test_fleet_watch.c makes its TLS certificates (fake_kube.py: python3 stdlib)
)

missing=()
for p in "${PKGS[@]}"; do
  # Node.js from elsewhere (e.g. NodeSource, whose nodejs bundles npm and conflicts
  # with Debian's npm) serves the portal's browser tests as well as Debian's.
  if [[ "$p" == nodejs || "$p" == npm ]] && command -v node >/dev/null && command -v npm >/dev/null; then continue; fi
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$st" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  exit 1
fi

echo "installing Debian packages: ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the lists only when an install from the current lists fails.
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
