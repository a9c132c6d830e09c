#!/usr/bin/env bash
# Soak: the REST API and the gateway under steady load on loopback for MINUTES minutes,
# watching the daemon's memory and descriptors. Starts build/gpuaas and build/fake-openai
# (the gateway's upstream; stands in for vLLM), then every minute runs, side by side:
#  - REST: wrk (Debian's) at C_REST connections cycling submit (POST /api/v1/workloads, one
#    Job to a held queue, so no pod runs), get (a workload submitted 32 submits earlier),
#    list (GET /api/v1/workloads?namespace=soak), cancel (64 earlier) and delete (96
#    earlier; a pending workload is cancelled before it can be deleted), so that about
#    96 workloads are kept at any time;
#  - gateway: wrk at C_GW connections, small non-streamed chat completions with a key
#    (auth, limits, usage metering on).
# After each minute it prints req/s, p99 and non-2xx answers of each, the daemon's RSS
# (VmRSS of /proc/PID/status) and its open descriptors, and deletes the workloads left.
# Reference, in the same run: GET /healthz through the same client (wrk, C_REST
# connections, 10 s) before the first minute and after the last; the ratios are each
# load's req/s over the reference's. The gateway's load alone (10 s, before and after)
# is the reference for what the REST writes beside it cost the gateway.
# RSS bound: warm-up is the first minute (the first two from 4 minutes on); the soak holds
# when the last minute's RSS is at most the warm-up's last plus max(8 MiB, 10 %), and the
# descriptors the same as after warm-up (within 8). It exits 1 when either grew (a leak,
# not a time); figures are never judged.
# Usage: [C_REST=8] [C_GW=8] bench/soak.sh [MINUTES=10]   (needs wrk, curl, jq)
set -euo pipefail
MIN=${1:-10}
C_REST=${C_REST:-8}
C_GW=${C_GW:-8}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GPUAAS_BIN:-$ROOT/build/gpuaas}
FAKE=${FAKE_BIN:-$(dirname "$BIN")/fake-openai}
for t in wrk curl jq; do command -v $t >/dev/null || { echo "bench/soak: needs $t (scripts/install-deps.sh)"; exit 1; }; done
for b in "$BIN" "$FAKE"; do [[ -x $b ]] || { echo "bench/soak: no $b (make all build/fake-openai, or set GPUAAS_BIN)"; exit 1; }; done
((MIN >= 2)) || { echo "bench/soak: MINUTES must be at least 2 (one of warm-up)"; exit 1; }
TMP=$(mktemp -d /tmp/gpuaas-soak.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

"$FAKE" --port-file "$TMP/up.port" --tokens 8 >"$TMP/fake.log" 2>&1 & PIDS+=($!)
for _ in $(seq 50); do [[ -s $TMP/up.port ]] && break; sleep 0.1; done
UP=$(cat "$TMP/up.port")

source "$ROOT/bench/lib.sh"
bench_cpu_queues held soak q "stopPolicy: Hold" > "$TMP/queues.yaml"
cat >"$TMP/gpuaas.yaml" <<Y
apiVersion: gpuaas.dev/v1alpha1
kind: ServerConfig
listen: 127.0.0.1:0
dataDir: $TMP/data
inventory: {source: simulated, nodes: $ROOT/examples/demo/node.yaml}
manifests: [$TMP/queues.yaml]
Y
bench_serve "$TMP/gpuaas.yaml"
S=$URL
bench_gateway soak "$UP"

# REST: one request after another from a counter per wrk thread; the minute's number
# (wrk's argument) keeps names unique across minutes.
cat >"$TMP/rest.lua" <<'L'
-- wrk calls request() once to check it (script_verify_request) and sends nothing of it:
-- -1, so that the first submit sent is number 0
local n, m = -1, "0"
local auth = "Bearer " .. os.getenv("SOAK_TOKEN")
function init(args) m = args[1] or "0" end
local function name(i) return "s" .. m .. "-" .. i end
function request()
  local i = math.floor(n / 5)
  local step = n % 5
  n = n + 1
  local h = {["Authorization"] = auth}
  if step == 0 then
    h["Content-Type"] = "application/yaml"
    return wrk.format("POST", "/api/v1/workloads", h,
      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " .. name(i) ..
      ", namespace: soak, labels: {kueue.x-k8s.io/queue-name: q}}\nspec:\n  template:\n    spec:\n" ..
      "      containers: [{name: c, image: none, command: [\"true\"], resources: {requests: {cpu: 10m}}}]\n")
  elseif step == 1 then
    return wrk.format("GET", "/api/v1/workloads/soak/" .. name(math.max(i - 32, 0)), h)
  elseif step == 2 or (step == 3 and i < 64) or (step == 4 and i < 96) then
    return wrk.format("GET", "/api/v1/workloads?namespace=soak", h)
  elseif step == 3 then
    return wrk.format("POST", "/api/v1/workloads/soak/" .. name(i - 64) .. "/cancel", h)
  end
  return wrk.format("DELETE", "/api/v1/workloads/soak/" .. name(i - 96), h)
end
L
cat >"$TMP/gw.lua" <<L
wrk.method = "POST"
wrk.body = '{"model":"fake-model","messages":[{"role":"user","content":"hello there"}],"max_tokens":8}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
L
export SOAK_TOKEN=$ADMIN
ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; printf "%.2f", v}'; }
# figures FILE -> "req/s p99_ms non2xx"
figures() {
  local rps p99 bad
  rps=$(awk '/Requests\/sec/{printf "%.0f", $2}' "$1")
  p99=$(awk '$1=="99%"{print $2}' "$1" | ms)
  bad=$(awk '/Non-2xx/{print $5}' "$1")
  echo "$rps $p99 ${bad:-0}"
}
rss_kib() { awk '/^VmRSS:/{print $2}' "/proc/$GPID/status"; }
nfd() { ls "/proc/$GPID/fd" | wc -l; }
# the workloads a minute left behind (its last 96 submits): cancel and delete them
sweep() {
  local w
  curl -s -H "Authorization: Bearer $ADMIN" "$S/api/v1/workloads?namespace=soak" | jq -r '.items[].name' |
    while read -r w; do
      curl -s -o /dev/null -X POST -H "Authorization: Bearer $ADMIN" "$S/api/v1/workloads/soak/$w/cancel"
      curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $ADMIN" "$S/api/v1/workloads/soak/$w"
    done
}
reference() {
  wrk -t1 -c"$C_REST" -d10s --latency "$S/healthz" >"$TMP/ref.out" 2>&1
  figures "$TMP/ref.out"
}
# the gateway's load alone, 10 s: what the REST writes beside it cost the gateway
gateway_alone() {
  wrk -t1 -c"$C_GW" -d10s --latency -s "$TMP/gw.lua" "$S/v1/chat/completions" >"$TMP/gwref.out" 2>&1
  figures "$TMP/gwref.out"
}

echo "soak: $MIN minutes, $(nproc) CPUs; REST at $C_REST connections (submit/get/list/delete), gateway at $C_GW (chat completions)"
read -r ref1 ref1_p99 _ < <(reference)
printf "reference before: GET /healthz %s req/s, p99 %s ms\n" "$ref1" "$ref1_p99"
read -r gwa1 gwa1_p99 _ < <(gateway_alone)
printf "gateway alone before: %s req/s, p99 %s ms\n" "$gwa1" "$gwa1_p99"
printf "%6s %10s %9s %7s %10s %9s %7s %9s %5s\n" minute "REST r/s" "p99 ms" non2xx "gw r/s" "p99 ms" non2xx "RSS MiB" fds
WARM=$((MIN >= 4 ? 2 : 1))
declare -a RSS FDS RREST RGW
for m in $(seq 1 "$MIN"); do
  wrk -t1 -c"$C_REST" -d60s --latency -s "$TMP/rest.lua" "$S" -- "$m" >"$TMP/rest.out" 2>&1 &
  w1=$!
  wrk -t1 -c"$C_GW" -d60s --latency -s "$TMP/gw.lua" "$S/v1/chat/completions" >"$TMP/gw.out" 2>&1 &
  w2=$!
  wait $w1 $w2
  read -r r_rps r_p99 r_bad < <(figures "$TMP/rest.out")
  read -r g_rps g_p99 g_bad < <(figures "$TMP/gw.out")
  RSS[m]=$(rss_kib); FDS[m]=$(nfd); RREST[m]=$r_rps; RGW[m]=$g_rps
  printf "%6d %10s %9s %7s %10s %9s %7s %9.1f %5d\n" "$m" "$r_rps" "$r_p99" "$r_bad" "$g_rps" "$g_p99" "$g_bad" \
    "$(awk -v k="${RSS[m]}" 'BEGIN{print k/1024}')" "${FDS[m]}"
  sweep
  left=$(curl -s -H "Authorization: Bearer $ADMIN" "$S/api/v1/workloads?namespace=soak" | jq '.items | length')
  ((left == 0)) || echo "  ($left workloads left after the sweep)"
done
read -r ref2 ref2_p99 _ < <(reference)
printf "reference after:  GET /healthz %s req/s, p99 %s ms\n" "$ref2" "$ref2_p99"
read -r gwa2 gwa2_p99 _ < <(gateway_alone)
printf "gateway alone after:  %s req/s, p99 %s ms\n" "$gwa2" "$gwa2_p99"
ref=$(( (ref1 + ref2) / 2 ))
awk -v r="${RREST[MIN]}" -v g="${RGW[MIN]}" -v ref="$ref" 'BEGIN{
  printf "ratio (last minute / reference %d req/s): REST %.3f, gateway %.3f (each ran beside the other)\n", ref, r / ref, g / ref }'
awk -v g="${RGW[MIN]}" -v a="$(( (gwa1 + gwa2) / 2 ))" 'BEGIN{
  printf "gateway beside REST writes / gateway alone (%d req/s): %.3f\n", a, g / a }'
base=${RSS[WARM]} last=${RSS[MIN]}
bound=$(awk -v b="$base" 'BEGIN{x = b * 0.10; if (x < 8192) x = 8192; printf "%d", b + x}')
printf "RSS: %.1f MiB after warm-up (minute %d), %.1f MiB at the end; bound %.1f MiB (+max(8 MiB, 10 %%))\n" \
  "$(awk -v k="$base" 'BEGIN{print k/1024}')" "$WARM" "$(awk -v k="$last" 'BEGIN{print k/1024}')" \
  "$(awk -v k="$bound" 'BEGIN{print k/1024}')"
printf "descriptors: %d after warm-up, %d at the end (bound +8)\n" "${FDS[WARM]}" "${FDS[MIN]}"
if ((last > bound || FDS[MIN] > FDS[WARM] + 8)); then echo "soak: GREW (a leak?)"; exit 1; fi
echo "soak: flat"
