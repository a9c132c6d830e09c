#!/usr/bin/env python3
"""kueue_scale: Kueue's scheduler scalability configurations as gpuaas scenarios.

Generates (into a directory you choose, e.g. build/ or /tmp; nothing is committed)
the scenario YAML that `gpuaas sim scenario` replays, following Kueue's
test/performance/scheduler generator:
  - one ResourceFlavor "rf"; per cohort N ClusterQueues, each with cpu nominalQuota 20,
    borrowingLimit 100, preemption reclaimWithinCohort Any, withinClusterQueue
    LowerPriority; one namespace and LocalQueue per ClusterQueue;
  - per ClusterQueue, three workload sets created concurrently, one workload per
    creation interval (the first after one interval):
        small  request 1 cpu,  runs 200 ms, priority 50,  every 100 ms
        medium request 5 cpu,  runs 500 ms, priority 100, every 500 ms
        large  request 20 cpu, runs 1 s,    priority 200, every 1200 ms
  - Kueue Workloads with spec.priority (no priority class), 1 pod each.
Configurations:
  baseline     5 cohorts x 6 CQs,    per CQ 350/100/50  -> 15,000 workloads
  large-scale  10 cohorts x 100 CQs, per CQ 35/10/5     -> 50,000 workloads
               (the reference's 50 per CQ, in the baseline's 7:2:1 mix)
  mid          2 cohorts x 100 CQs, per CQ 35/10/5      -> 10,000 (for profiling)
Usage: kueue_scale.py {baseline|large-scale|mid} OUTFILE
"""
import sys

CONFIGS = {
    "baseline": (5, 6, (350, 100, 50)),
    "large-scale": (10, 100, (35, 10, 5)),
    "mid": (2, 100, (35, 10, 5)),
}
CLASSES = (  # name, request cpu, runtime ms, priority, interval ms
    ("small", 1, 200, 50, 100),
    ("medium", 5, 500, 100, 500),
    ("large", 20, 1000, 200, 1200),
)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CONFIGS:
        sys.stderr.write("usage: kueue_scale.py {baseline|large-scale|mid} OUTFILE\n")
        return 2
    cohorts, cqs, counts = CONFIGS[sys.argv[1]]
    out = open(sys.argv[2], "w")
    w = out.write
    w("# Kueue scheduler performance config %r reproduced for gpuaas (bench/kueue_scale.py)\n" % sys.argv[1])
    w("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: rf}\n")
    names = []
    for c in range(cohorts):
        for q in range(cqs):
            name = "cq-0-%d-cohort-%d" % (q, c)
            names.append(name)
            w("---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: %s}\n"
              "spec:\n  cohortName: cohort-%d\n  namespaceSelector: {}\n"
              "  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}\n"
              "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: rf\n"
              "      resources: [{name: cpu, nominalQuota: 20, borrowingLimit: 100}]\n" % (name, c))
            w("---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\n"
              "spec: {clusterQueue: %s}\n" % (name, name, name))
    # Workloads as one JSON object per document (JSON is YAML; the scenario runner
    # reads such documents with the JSON parser, which keeps the load cheap).
    for name in names:
        for set_idx, (cls, req, run, prio, every) in enumerate(CLASSES):
            for i in range(counts[set_idx]):
                w('---\n{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", '
                  '"metadata": {"name": "%s-%d-%d-0", "namespace": "%s", "annotations": '
                  '{"gpuaas.dev/submit-at": "%dms", "gpuaas.dev/run-for": "%dms"}}, '
                  '"spec": {"queueName": "%s", "priority": %d, "podSets": [{"name": "main", "count": 1, '
                  '"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "%d"}}}]}}}]}}\n'
                  % (cls, set_idx, i, name, (i + 1) * every, run, name, prio, req))
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
