#!/usr/bin/env bash
# kueue_scale: replay Kueue's scheduler scalability configurations (baseline, large-scale;
# see bench/kueue_scale.py and ../shared/reference/kueue.md section 3) through
# `gpuaas sim scenario` and print wall time, CPU time, peak RSS and admissions per
# CPU-second. Scenario files are generated into $OUT (default build/bench), never
# committed. Prints figures; never fails on time.
# Usage: bench/kueue_scale.sh [baseline|large-scale|all]   (GPUAAS_BIN=build/gpuaas)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GPUAAS_BIN:-$root/build/gpuaas}
out=${OUT:-$root/build/bench}
which=${1:-all}
mkdir -p "$out"
[ -x "$bin" ] || { echo "kueue_scale: $bin not built (make)" >&2; exit 2; }
# Kueue's published means (test/performance/scheduler, 19 CI runs for large-scale).
declare -A kueue_wall=([baseline]=351.1 [large-scale]=1179)
declare -A kueue_wl=([baseline]=15000 [large-scale]=50000)
run() {
    local cfg=$1 y="$out/kueue-$1.yaml" res="$out/kueue-$1.out" tm="$out/kueue-$1.time"
    [ -f "$y" ] || python3 "$root/bench/kueue_scale.py" "$cfg" "$y"
    /usr/bin/time -f "%e %U %S %M" -o "$tm" "$bin" sim scenario "$y" > "$res"
    read -r wall user sys rss < "$tm"
    local summary; summary=$(tail -1 "$res")
    python3 - "$cfg" "$wall" "$user" "$sys" "$rss" "$summary" "${kueue_wall[$cfg]}" "${kueue_wl[$cfg]}" <<'PY'
import json, sys
cfg, wall, user, sys_, rss, summary, kwall, kwl = sys.argv[1:]
s = json.loads(summary)["summary"]
cpu = float(user) + float(sys_)
print(f"kueue-{cfg}: {kwl} workloads, wall {float(wall):.2f} s, cpu {cpu:.2f} s (user {user} + sys {sys_}), "
      f"peak RSS {int(rss)/1024:.1f} MiB")
print(f"  admissions {s['admitted']} (preemptions {s['preempted']}), {s['admitted']/cpu:,.0f} admissions per CPU-second; "
      f"simulated makespan {s['makespan']} s")
print(f"  Kueue (minimalkueue on envtest, published mean): wall {kwall} s for the same workloads, i.e. "
      f"{int(kwl)/float(kwall):.1f} workloads/s end to end; its wall includes the simulated run times, so the "
      f"comparable figure is our simulated makespan ({s['makespan']} s of virtual time) replayed in {cpu:.2f} CPU s: "
      f"{float(kwall)/cpu:,.0f}x less time than Kueue's wall")
PY
}
case $which in
    all) run baseline; run large-scale ;;
    baseline|large-scale) run "$which" ;;
    *) echo "usage: $0 [baseline|large-scale|all]" >&2; exit 2 ;;
esac
