#!/usr/bin/env bash
# Benchmark: commits per second of the fleet publisher's git half (gx_git_commit_push,
# bench/fleet_publish.c) against the git CLI doing the same loop in the same run: per
# publish, bring the clone up to date with the remote, write one file, commit it with
# the user as author, push to a local bare repository.
# Usage: bench/fleet_publish.sh [N=200]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FLEET_PUBLISH_BENCH_BIN:-$(dirname "${GPUAAS_BIN:-$ROOT/build/gpuaas}")/bench-fleet-publish}
[[ -x $BIN ]] || { echo "bench/fleet_publish: $BIN is missing (make bench builds it)"; exit 1; }
N=${1:-200}
DIR=$(mktemp -d /tmp/gpuaas-bench-publish.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

mkdir "$DIR/lib" "$DIR/cli"
git init -q --bare -b main "$DIR/lib/remote.git"
"$BIN" "$DIR/lib" "$N"

git init -q --bare -b main "$DIR/cli/remote.git"
git clone -q "$DIR/cli/remote.git" "$DIR/cli/repo" 2>/dev/null
cd "$DIR/cli/repo"
git checkout -q -b main
start=$(date +%s.%N)
for ((i = 0; i < N; i++)); do
  f=$(printf 'clusters/a/team/job-%04d.yaml' "$i")
  mkdir -p "$(dirname "$f")"
  printf 'kind: Job\nn: %d\n' "$i" > "$f"
  git fetch -q origin
  git rev-parse -q --verify origin/main >/dev/null && git merge -q --ff-only origin/main
  git add "$f"
  git -c user.name=gpuaas -c user.email=gpuaas@localhost commit -q --author='alice <alice@example.org>' \
      -m "$(printf 'submit job-%04d for alice' "$i")"
  git push -q origin main
done
end=$(date +%s.%N)
awk -v n="$N" -v s="$start" -v e="$end" \
  'BEGIN { printf "git CLI (reference):          %d publishes in %.2f s: %.1f commits/s\n", n, e - s, n / (e - s) }'
[[ $(git -C "$DIR/lib/remote.git" rev-list --count main) == "$N" ]] || { echo "bench/fleet_publish: libgit2 remote lacks commits"; exit 1; }
[[ $(git -C "$DIR/cli/remote.git" rev-list --count main) == "$N" ]] || { echo "bench/fleet_publish: CLI remote lacks commits"; exit 1; }
