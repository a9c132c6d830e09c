# Shared by the benchmarks that start a daemon of their own (gateway.sh, soak.sh,
# submit_burst.sh): starting it, setting up an unlimited gateway, and CPU-only queues.
# Source it after setting BIN, TMP and PIDS (the script's cleanup kills PIDS).

# bench_serve CONFIG: start "$BIN" serve on CONFIG (whose dataDir is $TMP/data), its log
# in $TMP/serve.log; sets GPID, URL (its address) and ADMIN (the admin token it printed
# at its first start). Exits the script when it does not come up in 10 s.
bench_serve() {
  "$BIN" serve --config "$1" >"$TMP/serve.log" 2>&1 & GPID=$!; PIDS+=("$GPID")
  for _ in $(seq 100); do [[ -s $TMP/data/serve.json ]] && break; sleep 0.1; done
  [[ -s $TMP/data/serve.json ]] || { echo "bench: the daemon did not start: $(tail -3 "$TMP/serve.log")"; exit 1; }
  URL=$(jq -r .url "$TMP/data/serve.json")
  ADMIN=$(grep -o 'gpt_[A-Za-z0-9_]*' "$TMP/serve.log" | head -1)
}

# bench_gateway TIER UPSTREAM_PORT: a Tier with limits no benchmark reaches, the Model
# fake-model on the upstream at UPSTREAM_PORT open to it, and a key of that tier in KEY;
# waits until the model is Ready. Needs URL and ADMIN (bench_serve).
bench_gateway() {
  curl -sf -H "Authorization: Bearer $ADMIN" --data-binary @- "$URL/api/v1/apply" >/dev/null <<Y
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: $1}
spec: {limits: {requestsPerMinute: 100000000, tokensPerMinute: 100000000000, tokensPerDay: 1000000000000, maxConcurrentRequests: 100000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: fake}
spec: {servedNames: [fake-model], tiers: [$1], url: "http://127.0.0.1:$2"}
Y
  KEY=$(curl -sf -H "Authorization: Bearer $ADMIN" -d "{\"name\":\"$1\",\"tier\":\"$1\"}" "$URL/api/v1/keys" | jq -r .key)
  for _ in $(seq 100); do
    [[ $(curl -s -H "Authorization: Bearer $ADMIN" "$URL/api/v1/models/fake" | jq -r .state) == Ready ]] && return 0
    sleep 0.1
  done
  echo "bench: model fake not Ready in 10 s"; exit 1
}

# bench_cpu_queues [CQ NS LQ [SPEC_LINE]]...: the benchmarks' CPU-only queues on stdout: a
# ResourceFlavor cpu, then per triple a ClusterQueue CQ with 100000 cpu of quota (SPEC_LINE,
# such as "stopPolicy: Hold", added to its spec; "" for none) and LocalQueue NS/LQ on it.
bench_cpu_queues() {
  printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: cpu}\n'
  while (($# >= 4)); do
    printf -- '---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: %s}\nspec:\n  namespaceSelector: {}\n' "$1"
    [[ -n $4 ]] && printf '  %s\n' "$4"
    printf '  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: cpu\n      resources: [{name: cpu, nominalQuota: "100000"}]\n'
    printf -- '---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\nspec: {clusterQueue: %s}\n' "$3" "$2" "$1"
    shift 4
  done
}
