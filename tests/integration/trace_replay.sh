#!/usr/bin/env bash
# tests/integration/trace_replay: `gpuaas sim trace` on the Alibaba openb trace.
# Checks the JSON interface, the reproduction of the FGD paper's best-fit and FGD
# figures (within 1 point at 100 % arrived demand, 10 seeds), ours >= fgd from 80 % to
# 130 % and at least 96.0 % at 100 %, the offline upper bound (--bound) above every
# policy, the time-driven replay, and the error paths. Skips (exit 0) without the trace.
# Needs GPUAAS_BIN (path to the gpuaas binary) and python3. Takes about 10-20 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${GPUAAS_BIN:-build/gpuaas}
T=../shared/traces/alibaba-gpu-2023
N=$T/openb_node_list_gpu_node.csv
P=$T/openb_pod_list_default.csv
if [[ ! -f $N || ! -f $P ]]; then
    echo "skip: trace not found at $T (research data, not in the repo)"
    exit 0
fi
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

"$BIN" sim trace --help >/tmp/trace_help.$$ 2>&1 && ok "--help exits 0" || bad "--help exits 0"
for f in --nodes --pods --policy --seeds --tune --coverage -o --svg --expected --perturb \
         --perturb-seed --timed --no-sharing --time-scale --bound; do
    grep -q -- "$f" /tmp/trace_help.$$ || bad "--help documents $f"
done
rm -f /tmp/trace_help.$$

"$BIN" sim trace --nodes "$N" --pods "$P" --bogus >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && ok "unknown flag exits 2" || bad "unknown flag exits 2 (got $rc)"
"$BIN" sim trace --nodes /nonexistent.csv --pods "$P" >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && ok "unreadable file exits 2" || bad "unreadable file exits 2 (got $rc)"
"$BIN" sim trace --nodes "$N" --pods "$P" --policy nope >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && ok "unknown policy exits 2" || bad "unknown policy exits 2 (got $rc)"

out=$("$BIN" sim trace --nodes "$N" --pods "$P" --policy best-fit,fgd,ours --seeds 42-51 --bound -o json)
if [[ $? != 0 ]]; then
    bad "replay best-fit,fgd,ours"
else
    python3 - "$out" <<'PY' || fail=1
import json, sys
b, f, o = json.loads(sys.argv[1])
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    return ok
good = True
for r in (b, f, o):
    good &= check(len(r["curve"]) == 131 and r["total_gpus"] == 6212 and r["tune"] == 1.3
                  and r["seeds"] == list(range(42, 52)), "%s: JSON shape" % r["policy"])
good &= check(abs(b["alloc_ratio_at_100"] - 92.86) <= 1.0,
              "best-fit at 100%%: %.2f vs published 92.86" % b["alloc_ratio_at_100"])
good &= check(abs(f["alloc_ratio_at_100"] - 95.23) <= 1.0,
              "fgd at 100%%: %.2f vs published 95.23" % f["alloc_ratio_at_100"])
lo = min(o["curve"][k] - f["curve"][k] for k in range(80, 131))
good &= check(lo >= -0.005, "ours >= fgd from 80 to 130 %% arrived (min diff %+.3f)" % lo)
good &= check(o["alloc_ratio_at_100"] > f["alloc_ratio_at_100"],
              "ours above fgd at 100%%: %.2f vs %.2f" % (o["alloc_ratio_at_100"],
                                                          f["alloc_ratio_at_100"]))
good &= check(o["alloc_ratio_at_100"] >= 96.0,
              "ours at least 96.0 %% at 100 %% arrived (the issue's goal): %.2f" % o["alloc_ratio_at_100"])
bd = o["bound_at_100"]
good &= check(f["bound_at_100"] == bd and max(b["alloc_ratio_at_100"], f["alloc_ratio_at_100"],
              o["alloc_ratio_at_100"]) <= bd <= 100.0,
              "offline bound %.2f %% above every policy at 100 %% arrived, at most 100" % bd)
sys.exit(0 if good else 1)
PY
fi

# Not the mean delay: on these 8 nodes it is 95 % the few 8-GPU pods that wait, in
# either mode, for a whole node to drain while smaller pods backfill, so it moves with
# where a handful of long pods landed (docs/placement.md, "What sharing buys").
out=$("$BIN" sim trace --nodes "$N" --pods "$P" --timed --perturb nodes=0.01 -o json)
if [[ $? == 0 ]] && python3 -c '
import json, sys
r = json.loads(sys.argv[1])
modes = {x["mode"]: x for x in r}
s, n = modes["sharing"], modes["no-sharing"]
assert 0 < s["gpu_utilisation"] <= 100 and s["delay_s"]["p99"] >= s["delay_s"]["p50"]
assert s["queued"] < n["queued"], "sharing should queue fewer pods"
assert s["delay_s"]["p90"] <= n["delay_s"]["p90"] and s["delay_s"]["p99"] <= n["delay_s"]["p99"], \
    "sharing should not queue longer at p90 and p99"
' "$out"; then ok "timed replay: sharing queues fewer pods, less long"; else bad "timed replay"; fi

exit $fail
