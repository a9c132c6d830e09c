#!/usr/bin/env bash
# Benchmark: how fast the portal renders its pages, server side. Starts gpuaas with the
# demo configuration (examples/demo: node, queues, templates; models.yaml applied, one
# demo Job submitted), signs in as the admin (who sees every section of every page),
# then for each main page runs wrk with the session cookie and prints req/s, p50 and
# p99 latency and the HTML size, with GET /healthz on the same daemon, in the same run,
# as the reference (the ratio column: page throughput / healthz throughput).
# Prints figures only; never fails on time.
# Usage: bench/portal.sh [SECONDS=5] [CONNECTIONS=16]   (needs wrk, curl, jq)
set -euo pipefail
D=${1:-5}
C=${2:-16}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
FAKE=${FAKE_BIN:-$(dirname "$BIN")/fake-openai}
for t in wrk curl jq; do command -v $t >/dev/null || { echo "bench/portal: needs $t (scripts/install-deps.sh)"; exit 1; }; done
[[ -x $BIN ]] || { echo "bench/portal: no $BIN (make first, or set GPUAAS_BIN)"; exit 1; }
TMP=$(mktemp -d /tmp/gpuaas-bench.XXXXXX)
GPID=""
cleanup() { [[ -n $GPID ]] && kill "$GPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

DEMO=$ROOT/examples/demo
cat >"$TMP/gpuaas.yaml" <<Y
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory: {source: simulated, nodes: $DEMO/node.yaml}
manifests:
- $DEMO/queues.yaml
- $ROOT/examples/templates/interactive-session.yaml
- $ROOT/examples/templates/batch-training.yaml
- $ROOT/examples/templates/fine-tuning.yaml
- $ROOT/examples/templates/deploy-model.yaml
Y
"$BIN" serve --config "$TMP/gpuaas.yaml" >"$TMP/serve.log" 2>&1 & GPID=$!
for _ in $(seq 100); do [[ -s $TMP/data/serve.json ]] && break; sleep 0.1; done
S=$(jq -r .url "$TMP/data/serve.json")
ADMIN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$TMP/serve.log" | tail -1)
api() { curl -sf -H "Authorization: Bearer $ADMIN" "$@"; }
# the demo's models (a scale-to-zero model: nothing starts unless it is called) and its Job
[[ -x $FAKE ]] || FAKE=/bin/true
sed "s|@ROOT@/build/fake-openai|$FAKE|" "$DEMO/models.yaml" | api --data-binary @- "$S/api/v1/apply" >/dev/null
WL=$(api --data-binary @"$DEMO/job.yaml" "$S/api/v1/workloads" | jq -r '.items[0].key // empty')
[[ $WL == */* ]] || WL=team-a/train-1

# sign in through the form, as a browser does (double-submit cookie, then the token)
L=$(curl -s -c "$TMP/jar" "$S/login" | grep -o 'name="_login" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
curl -s -o /dev/null -c "$TMP/jar" -b "$TMP/jar" --data-urlencode "_login=$L" --data-urlencode "token=$ADMIN" "$S/login"
SID=$(awk '$6 == "gx_session" { print $7 }' "$TMP/jar")
[[ -n $SID ]] || { echo "bench/portal: sign-in failed"; tail "$TMP/serve.log"; exit 1; }
COOKIE="Cookie: gx_session=$SID"

# wrk's latency figure in ms ("812.00us", "1.23ms", "2.01s")
ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'; }
# run PATH: "req/s p50 p99"
run() {
  local out
  out=$(wrk -t1 -c"$C" -d"${D}s" --latency -H "$COOKIE" "$S$1" 2>&1)
  if grep -q 'Non-2xx' <<<"$out"; then echo "bench/portal: $1 answered non-2xx: $(grep Non-2xx <<<"$out")" >&2; fi
  echo "$(awk '/^Requests\/sec/ { print $2 }' <<<"$out") $(ms "$(awk '$1 == "50%" { print $2 }' <<<"$out")") $(ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")"
}

echo "portal pages, server-side render: wrk -t1 -c$C -d${D}s with the admin's session cookie; $(nproc) CPUs"
echo "(workload page: /ui/workloads/$WL)"
read -r ref_rps ref_p50 ref_p99 <<<"$(run /healthz)"
printf '%-22s %8s %10s %9s %9s %12s\n' page "HTML B" "req/s" "p50 ms" "p99 ms" "vs /healthz"
printf '%-22s %8s %10.0f %9s %9s %12s\n' /healthz 3 "$ref_rps" "$ref_p50" "$ref_p99" "1.00"
for p in / /ui/new "/ui/workloads/$WL" /ui/models /ui/queues /ui/gpus /ui/admin; do
  code=$(curl -s -o "$TMP/page.html" -w '%{http_code}' -H "$COOKIE" "$S$p")
  [[ $code == 200 ]] || echo "bench/portal: $p answered $code" >&2
  bytes=$(wc -c <"$TMP/page.html")
  read -r rps p50 p99 <<<"$(run "$p")"
  name=$p; [[ $p == /ui/workloads/* ]] && name="/ui/workloads/NS/NAME"
  printf '%-22s %8d %10.0f %9s %9s %12s\n' "$name" "$bytes" "$rps" "$p50" "$p99" "$(awk -v a="$rps" -v b="$ref_rps" 'BEGIN { printf "%.2f", a / b }')"
done
