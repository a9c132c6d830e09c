#!/usr/bin/env python3
"""bench/idle/report.py: queue wait of the batch jobs (first admission - submission),
p50/p90 in minutes, and the GPU-hours reclaimed, from `gpuaas sim scenario` output on stdin."""
import json
import sys

sub, adm, summary = {}, {}, {}
for line in sys.stdin:
    e = json.loads(line)
    if "summary" in e:
        summary = e["summary"]
        continue
    w = e["workload"]
    if e["event"] == "submitted":
        sub[w] = e["t"]
    elif e["event"] == "admitted" and w not in adm:
        adm[w] = e["t"]
waits = sorted((adm[w] - sub[w]) / 60 for w in sub if "/batch-" in w and w in adm)
never = sum(1 for w in sub if "/batch-" in w and w not in adm)


def pct(p):
    return waits[min(len(waits) - 1, int(p * len(waits)))] if waits else float("nan")


print(f"batch jobs admitted {len(waits)}, never {never}; wait p50 {pct(0.5):.1f} min, p90 {pct(0.9):.1f} min; "
      f"makespan {summary.get('makespan', 0) / 3600:.2f} h; reclaimed {summary.get('idleReclaimedGpuHours', 0):.1f} GPU-hours")
