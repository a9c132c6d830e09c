#!/usr/bin/env python3
"""bench/idle/gen.py: a scenario for measuring IdlePolicy (docs/queueing.md, "Idle GPUs").

One ClusterQueue of 16 GPUs shared by interactive sessions (LocalQueue lab/sessions: 1-2
GPUs, busy 20-60 min, then under 5 % until their 8 h limit) and batch jobs (LocalQueue
lab/batch: 1-4 GPUs, 30-180 min, always busy): 24 sessions over the first 6 h, 40 jobs
over 12 h. Seeded, so the same file every time. `--policy` adds the shipped template's policy (stop after 30 min under
5 % plus 10 min of grace) for the sessions' LocalQueue.
Usage: gen.py [--policy] > FILE.yaml; then gpuaas sim scenario FILE.yaml | report.py
"""
import random
import sys

r = random.Random(19)
out = sys.stdout
out.write("""apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: shared}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
""")
for lq in ("sessions", "batch"):
    out.write(f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: {lq}, namespace: lab}}\n"
              "spec: {clusterQueue: shared}\n")
if "--policy" in sys.argv:
    out.write("""---
apiVersion: gpuaas.dev/v1alpha1
kind: IdlePolicy
metadata: {name: sessions-idle}
spec:
  localQueues: [lab/sessions]
  threshold: 5
  idleFor: 30m
  grace: 10m
  action: stop
""")
jobs = []
for i in range(24):
    jobs.append((r.randint(0, 6 * 3600), "s", i))
for i in range(40):
    jobs.append((r.randint(0, 12 * 3600), "b", i))
jobs.sort()
for at, kind, i in jobs:
    if kind == "s":
        g = r.choice([1, 1, 2])
        busy = r.randint(20, 60) * 60
        meta = (f"{{name: session-{i}, namespace: lab, labels: {{kueue.x-k8s.io/queue-name: sessions, "
                f"kueue.x-k8s.io/max-exec-time-seconds: \"28800\"}}, annotations: {{gpuaas.dev/submit-at: {at}s, "
                f"gpuaas.dev/utilization: \"0s={r.randint(40, 95)},{busy}s=2\"}}}}")
    else:
        g = r.choice([1, 1, 2, 2, 4])
        run = r.randint(30, 180) * 60
        meta = (f"{{name: batch-{i}, namespace: lab, labels: {{kueue.x-k8s.io/queue-name: batch}}, annotations: "
                f"{{gpuaas.dev/submit-at: {at}s, gpuaas.dev/run-for: {run}s, gpuaas.dev/utilization: \"0s=90\"}}}}")
    out.write(f"---\napiVersion: batch/v1\nkind: Job\nmetadata: {meta}\n"
              f"spec: {{template: {{spec: {{containers: [{{name: c, resources: {{requests: {{nvidia.com/gpu: {g}}}}}}}]}}}}}}\n")
