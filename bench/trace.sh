#!/usr/bin/env bash
# bench/trace: placement quality and speed on the Alibaba openb trace (FGD methodology).
# Prints, per policy, the wall time of a 10-seed replay and the GPU allocation ratio at
# 100 % arrived demand (with the FGD paper's published figure), then ours vs fgd measured
# in the same invocation. Prints figures only; never fails on time.
# Usage: bench/trace.sh [--quick]   (GPUAAS_BIN overrides build/gpuaas)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${GPUAAS_BIN:-build/gpuaas}
T=../shared/traces/alibaba-gpu-2023
if [[ ! -f $T/openb_node_list_gpu_node.csv || ! -f $T/openb_pod_list_default.csv ]]; then
    echo "skip: trace not found at $T (research data, not shipped in the repo)"
    exit 0
fi
[[ -x $BIN ]] || { echo "skip: $BIN not built (make)"; exit 0; }
SEEDS=42-51
[[ ${1:-} == --quick ]] && SEEDS=42-43
EXP=$T/fgd-expected-results/analysis_allo_discrete.csv
args=(sim trace --nodes "$T/openb_node_list_gpu_node.csv" --pods "$T/openb_pod_list_default.csv"
      --seeds "$SEEDS" -o json)
[[ -f $EXP ]] && args+=(--expected "$EXP")
echo "trace replay, seeds $SEEDS, tune 1.3 ($(nproc) CPUs)"
printf '%-15s %9s %12s %12s\n' policy seconds alloc@100% published
for p in random dot-product gpu-packing gpu-clustering best-fit fgd ours; do
    "$BIN" "${args[@]}" --policy "$p" | python3 -c '
import json, sys
r = json.load(sys.stdin)
pub = r.get("published_at_100")
print("%-15s %9.2f %12.2f %12s" % (r["policy"], r["seconds"], r["alloc_ratio_at_100"],
      "%.2f" % pub if pub is not None else "-"))'
done
# ours against fgd in one invocation (same seeds, same machine state)
"$BIN" "${args[@]}" --policy fgd,ours | python3 -c '
import json, sys
f, o = json.load(sys.stdin)
lo = min(o["curve"][k] - f["curve"][k] for k in range(80, min(len(o["curve"]), 131)))
print("ours/fgd: alloc@100 %.2f / %.2f = %.4f; time %.2fs / %.2fs = %.2f; "
      "min(ours - fgd) over 80..130 %% arrived: %+.2f points" % (
      o["alloc_ratio_at_100"], f["alloc_ratio_at_100"],
      o["alloc_ratio_at_100"] / f["alloc_ratio_at_100"], o["seconds"], f["seconds"],
      o["seconds"] / f["seconds"], lo))'
