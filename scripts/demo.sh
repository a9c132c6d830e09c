#!/usr/bin/env bash
# `make run`: start the daemon on the demo configuration, in the foreground.
# The admin token is printed once, at the first start (tokens are stored hashed and
# cannot be shown again); later starts keep it, as they keep everything else.
# A lost token: ROTATE=1 make run (or gpuaas serve --rotate-admin-token) prints a new one.
set -euo pipefail
cd "$(dirname "$0")/.."
cat <<TXT
Starting gpuaas on the demo configuration (examples/demo/). In another terminal:

  export PATH=\$PWD/build:\$PATH GPUAAS_SERVER=http://127.0.0.1:8080 GPUAAS_TOKEN=<the admin token printed below>
  gpuaas apply -f examples/demo/queues.yaml
  gpuaas submit -f examples/demo/job.yaml
  gpuaas ls
  gpuaas logs -f team-a/train-1

Stop with Ctrl-C: running jobs keep running and are re-adopted at the next start
(gpuaas drain cancels everything first). The admin token is shown at the first start
only; a lost one: ROTATE=1 make run.
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
ARGS=(--config "$CONFIG")
[[ ${ROTATE:-} == 1 ]] && ARGS+=(--rotate-admin-token)
exec build/gpuaas serve "${ARGS[@]}"
