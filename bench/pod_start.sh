#!/usr/bin/env bash
# Benchmark: pod start latency with and without the sandbox (docs/security.md), in the
# same run. Two daemons from the same binary, one with run.sandbox: none (the reference),
# one sandboxed (bubblewrap, its own uid, cgroup with limits, device nodes, private /tmp);
# N Jobs each, one at a time. Latency is submit -> the pod's command running: the client
# reads the clock, submits a Job whose command prints the clock, and subtracts. Both
# include the same HTTP submit, commit and scheduling pass, so the difference is what the
# sandbox costs a pod (identity, working folder, cgroup, bwrap's namespaces and mounts,
# the identity switch). Needs root (the sandbox does). Prints figures; never fails on time.
# Usage: bench/pod_start.sh [N]      (default 40)
set -euo pipefail
N=${1:-40}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
[[ $(id -u) -eq 0 ]] || { echo "bench/pod_start.sh: needs root (the sandbox switches uids)"; exit 0; }
TMP=$(mktemp -d /tmp/gpuaas-bench.XXXXXX)
CG=gpuaas-bench-${TMP##*.}
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  pkill -f "$TMP" 2>/dev/null || true
  for d in /sys/fs/cgroup/*/"$CG" /sys/fs/cgroup/"$CG"; do [[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

cat > "$TMP/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: cpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: b}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: cpu
      resources: [{name: cpu, nominalQuota: "1000"}, {name: memory, nominalQuota: 1Ti}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: bench}
spec: {clusterQueue: b}
YAML

# start NAME RUN-SECTION: a daemon; sets URL and TOKEN
start() {
  cat > "$TMP/$1.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/$1
manifests: [$TMP/queues.yaml]
run: $2
YAML
  "$BIN" serve --config "$TMP/$1.yaml" 2>"$TMP/$1.log" &
  PIDS+=($!)
  for _ in $(seq 100); do [[ -s $TMP/$1/serve.json ]] && break; sleep 0.1; done
  URL=$(jq -r .url "$TMP/$1/serve.json")
  TOKEN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$TMP/$1.log" | head -1)
}

# measure NAME: N Jobs one at a time; prints the latencies in microseconds, sorted
measure() {
  local name=$1 i t0 t1 phase
  for i in $(seq 1 "$N"); do
    printf 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: p%d, namespace: bench, labels: {kueue.x-k8s.io/queue-name: q}}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      containers: [{name: c, image: none, command: ["date", "+%%s%%N"], resources: {limits: {cpu: "1", memory: 256Mi}}}]\n' "$i" > "$TMP/p.yaml"
    t0=$(date +%s%N)
    curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" --data-binary @"$TMP/p.yaml" "$URL/api/v1/workloads"
    for _ in $(seq 1 500); do
      phase=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/api/v1/workloads/bench/p$i" | jq -r .phase)
      [[ $phase == Succeeded || $phase == Failed ]] && break
      sleep 0.01
    done
    [[ $phase == Succeeded ]] || { echo "  $name: p$i ended $phase: $(cat "$TMP/$name/logs/bench/p$i/pod-0.log")" >&2; continue; }
    t1=$(head -1 "$TMP/$name/logs/bench/p$i/pod-0.log")
    echo $(((t1 - t0) / 1000))
  done | sort -n
}

pct() { awk -v p="$2" '{a[NR]=$1} END {i=int(NR*p/100+0.5); if(i<1)i=1; if(i>NR)i=NR; print a[i]}' "$1"; }

start none "{sandbox: none}"
measure none > "$TMP/none.txt"
start boxed "{cgroupParent: $CG}"
grep 'sandbox:' "$TMP/boxed.log" | sed 's/^ */  /'
measure boxed > "$TMP/boxed.txt"

printf '%-28s %10s %10s %10s %8s\n' "pod start, submit -> running" "p50 (us)" "p90 (us)" "max (us)" "pods"
for n in none boxed; do
  printf '%-28s %10s %10s %10s %8s\n' "$([[ $n == none ]] && echo "unsandboxed (reference)" || echo sandboxed)" \
    "$(pct "$TMP/$n.txt" 50)" "$(pct "$TMP/$n.txt" 90)" "$(tail -1 "$TMP/$n.txt")" "$(wc -l < "$TMP/$n.txt")"
done
a=$(pct "$TMP/none.txt" 50) b=$(pct "$TMP/boxed.txt" 50)
echo "sandbox cost at p50: $((b - a)) us per pod; ratio sandboxed/unsandboxed $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", b/a}')"
