#!/usr/bin/env bash
# Benchmark: submit-to-admitted latency in the daemon under a burst of N submits.
# Starts the real daemon (build/gpuaas) on a free loopback port with a temporary data
# dir, fires N individual POST /api/v1/workloads from 8 concurrent curl workers, then
# reads each workload's createdAt/admittedAt. Reference in the same run: the same
# N requests to GET /healthz through the same client pipeline, so the ratio shows what
# a durable submit (parse, validate, SQLite commit) costs over a trivial request.
# Prints figures only; never fails on time.   Usage: bench/submit_burst.sh [N]
set -euo pipefail
N=${1:-1000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
TMP=$(mktemp -d /tmp/gpuaas-bench.XXXXXX)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; pkill -f "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT

source "$ROOT/bench/lib.sh"
bench_cpu_queues burst bench q "" held hold held "stopPolicy: Hold" > "$TMP/queues.yaml"
cat > "$TMP/gpuaas.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
manifests: [$TMP/queues.yaml]
limits: {maxWorkloads: $((2 * N + 10))}
YAML
bench_serve "$TMP/gpuaas.yaml"
PID=$GPID TOKEN=$ADMIN

mkdir -p "$TMP/jobs"
for i in $(seq 1 "$N"); do
  printf 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: j%d, namespace: bench, labels: {kueue.x-k8s.io/queue-name: q}}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: none, command: ["true"], resources: {requests: {cpu: 10m}}}]\n' "$i" > "$TMP/jobs/j$i.yaml"
  sed 's/namespace: bench, labels: {kueue.x-k8s.io\/queue-name: q}/namespace: hold, labels: {kueue.x-k8s.io\/queue-name: held}/' "$TMP/jobs/j$i.yaml" > "$TMP/jobs/h$i.yaml"
done

# One curl process drives all requests (--parallel, 8 at a time): the client's own
# start-up cost must not be what we measure.
{ for i in $(seq 1 "$N"); do
    ((i > 1)) && echo next
    printf 'silent\nurl = "%s/api/v1/workloads"\nheader = "Authorization: Bearer %s"\ndata-binary = "@%s/jobs/j%d.yaml"\noutput = "/dev/null"\n' "$URL" "$TOKEN" "$TMP" "$i"
  done; } > "$TMP/submit.curl"
{ for i in $(seq 1 "$N"); do ((i > 1)) && echo next; printf 'silent\nurl = "%s/healthz"\noutput = "/dev/null"\n' "$URL"; done; } > "$TMP/health.curl"
sed 's#/jobs/j#/jobs/h#' "$TMP/submit.curl" > "$TMP/held.curl"
now_ms() { date +%s%3N; }
# 1. the submit path alone: a held ClusterQueue admits nothing, so no process starts
th=$(now_ms)
curl -s --parallel --parallel-max 8 -K "$TMP/held.curl"
# 2. the burst: every workload is admitted and its process started
t0=$(now_ms)
curl -s --parallel --parallel-max 8 -K "$TMP/submit.curl"
t1=$(now_ms)
curl -s --parallel --parallel-max 8 -K "$TMP/health.curl"
t2=$(now_ms)

# wait until every workload has been admitted (most have finished already)
for _ in $(seq 600); do
  left=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/api/v1/workloads?namespace=bench&state=Pending" | jq '.items | length')
  [[ "$left" == 0 ]] && break
  sleep 0.1
done
curl -s -H "Authorization: Bearer $TOKEN" "$URL/api/v1/workloads?namespace=bench" > "$TMP/all.json"
jq -r '.items[] | select(.admittedAt != null) | [.createdAt, .admittedAt] | @tsv' "$TMP/all.json" |
  while IFS=$'\t' read -r c a; do
    echo $(( $(date -d "$a" +%s%3N) - $(date -d "$c" +%s%3N) ))
  done | sort -n > "$TMP/lat.txt"
admitted=$(wc -l < "$TMP/lat.txt")
pct() { awk -v p="$1" '{v[NR]=$1} END {i=int(NR*p/100+0.999); if(i<1)i=1; print v[i]}' "$TMP/lat.txt"; }
held_s=$(awk -v a="$th" -v b="$t0" 'BEGIN{printf "%.2f", (b-a)/1000}')
submit_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", (b-a)/1000}')
health_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.2f", (b-a)/1000}')
echo "submit path:  $N durable submits to a held queue in ${held_s}s ($(awk -v n="$N" -v s="$held_s" 'BEGIN{printf "%.0f", n/s}')/s; nothing admitted)"
echo "submit burst: $N submits from 8 curl workers in ${submit_s}s ($(awk -v n="$N" -v s="$submit_s" 'BEGIN{printf "%.0f", n/s}')/s)"
echo "reference:    $N GET /healthz through the same client in ${health_s}s ($(awk -v n="$N" -v s="$health_s" 'BEGIN{printf "%.0f", n/s}')/s)"
echo "ratio:        a durable submit costs $(awk -v a="$held_s" -v b="$health_s" 'BEGIN{printf "%.2f", a/b}')x a trivial request; with admission and process start $(awk -v a="$submit_s" -v b="$health_s" 'BEGIN{printf "%.2f", a/b}')x"
echo "admitted:     $admitted of $N"
echo "submit-to-admitted latency (ms, createdAt -> admittedAt): p50 $(pct 50)  p90 $(pct 90)  p99 $(pct 99)  max $(pct 100)"
