#!/usr/bin/env bash
# `make bench`: run every benchmark in bench/ in turn. Each prints its own figures and
# a ratio against a reference measured in the same run; none fails on time.
set -uo pipefail
cd "$(dirname "$0")"
export GPUAAS_BIN=${GPUAAS_BIN:-$(cd .. && pwd)/build/gpuaas}
for b in *.sh; do
  [[ "$b" == run.sh ]] && continue
  [[ -n "${ONLY:-}" && "$b" != *"$ONLY"* ]] && continue
  echo "== bench/$b"
  bash "$b" || echo "bench/$b exited with $? (figures above may be partial)"
  echo
done
