#!/usr/bin/env bash
# `make run`: start the daemon on the demo configuration, in the foreground.
# The admin token is rotated at each demo start so that it can be printed (tokens are
# stored hashed; a token cannot be shown again once created).
set -euo pipefail
cd "$(dirname "$0")/.."
cat <<TXT
Starting gpuaas on the demo configuration (examples/demo/). In another terminal:

  export PATH=\$PWD/build:\$PATH GPUAAS_TOKEN=<the token printed below>
  gpuaas apply -f examples/demo/queues.yaml
  gpuaas submit -f examples/demo/job.yaml
  gpuaas ls
  gpuaas logs -f team-a/train-1

Stop with Ctrl-C (running workloads are re-adopted at the next start).
TXT
CONFIG=examples/demo/gpuaas.yaml
if [[ $(id -u) -ne 0 ]]; then
  # The pod sandbox switches each pod to its namespace's uid, which needs root. Run as
  # yourself, the demo's pods run as you, unsandboxed: fine for a laptop, never for a
  # shared server (docs/security.md).
  CONFIG=examples/demo/.gpuaas-unsandboxed.yaml
  { cat examples/demo/gpuaas.yaml; echo "run: {sandbox: none}   # written by scripts/demo.sh: not root"; } > "$CONFIG"
  echo "NOTE: not root: the demo's pods run as $(id -un), unsandboxed (run.sandbox: none; docs/security.md)"
fi
exec build/gpuaas serve --config "$CONFIG" --rotate-admin-token
