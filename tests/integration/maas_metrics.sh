#!/usr/bin/env bash
# The model servers' vllm:* metrics on the daemon's /metrics, end to end over real HTTP
# on loopback. build/fake-openai stands in for vLLM: its GET /metrics has three vllm:
# families (a gauge of the requests it is serving, a counter, a histogram) and one that
# is not vLLM's (process_cpu_seconds_total).
# Covers:
#  - every ready replica of a Model (spec.urls) is scraped, each sample labelled
#    gpuaas_model and gpuaas_replica; the families of both replicas are merged under one
#    # HELP and one # TYPE; the non-vllm family is not passed on; the whole /metrics is
#    valid exposition text (checked by a small parser below);
#  - the scrape carries the model's upstream API key (spec.apiKeyFile); a server that
#    refuses it counts in gpuaas_gateway_scrapes_total{result="failed"};
#  - the numbers are live: a request held open by a replica shows as
#    vllm:num_requests_running 1 for that replica;
#  - a replica that stops being ready (its server died) drops out of /metrics;
#  - numbers print exactly: a 600Mi quota as 629145600, histogram bounds as le="1048576".
# GPUAAS_GATEWAY_SCRAPE_MS=300 replaces the 15 s interval. Every wait is a bounded poll.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
start_fake a --token-ms 20 && start_fake b --token-ms 20 && start_fake locked --api-key s3cret-upstream-key ||
  { fail "fake model servers start"; finish; exit 1; }
PA=$(cat "$TMP/a.port") PB=$(cat "$TMP/b.port") PL=$(cat "$TMP/locked.port")
printf 's3cret-upstream-key\n' >"$TMP/upstream.key"
within() { local n=$(($1 * 20)); shift; for _ in $(seq 1 "$n"); do "$@" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
metrics() { curl -s -m 5 "$GPUAAS_SERVER/metrics"; }
has() { metrics | grep -qF -- "$1"; }            # has TEXT: /metrics holds TEXT now
hasnt() { ! metrics | grep -qF -- "$1"; }
# value SERIES-PREFIX: the value of the first sample whose text starts so
value() { metrics | awk -v p="$1" 'index($0, p) == 1 {print $NF; exit}'; }

export GPUAAS_GATEWAY_SCRAPE_MS=300
cfg=$(write_config mt "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

cat >"$TMP/models.yaml" <<YAML
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 100000}}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: pair}
spec: {servedNames: [pair-model], tiers: [open], urls: ["http://127.0.0.1:$PA", "http://127.0.0.1:$PB/v1"]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: locked}
spec: {servedNames: [locked-model], tiers: [open], url: "http://127.0.0.1:$PL", apiKeyFile: "$TMP/upstream.key"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: nokey}
spec: {servedNames: [nokey-model], tiers: [open], url: "http://127.0.0.1:$PL", readinessPath: /health}
YAML
check "apply a Tier and Models" "$G" apply -f "$TMP/models.yaml"

R0='vllm:num_requests_running{model_name="fake-model",gpuaas_model="pair",gpuaas_replica="0"} '
R1='vllm:num_requests_running{model_name="fake-model",gpuaas_model="pair",gpuaas_replica="1"} '
check "replica 0's vllm:num_requests_running is on /metrics, labelled" within 20 has "$R0"
check "replica 1's too (a URL ending in /v1)" within 20 has "$R1"
check "the scrape carries spec.apiKeyFile's key" within 20 has 'gpuaas_model="locked",gpuaas_replica="0"'
check "a scrape the server refuses (401) counts as failed" within 20 \
  bash -c "curl -s '$GPUAAS_SERVER/metrics' | grep -qE '^gpuaas_gateway_scrapes_total\{model=\"nokey\",result=\"failed\"\} [1-9]'"
out=$(metrics)
expect_eq "one # TYPE for the family of every replica" "$(grep -c '^# TYPE vllm:num_requests_running ' <<<"$out")" 1
expect_eq "one # HELP too" "$(grep -c '^# HELP vllm:num_requests_running ' <<<"$out")" 1
expect_eq "the histogram keeps its samples, relabelled" \
  "$(grep -c '^vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="fake-model",gpuaas_model="pair",gpuaas_replica="[01]"} ' <<<"$out")" 2
expect_eq "a family that is not vLLM's is not passed on" "$(grep -c 'process_cpu_seconds_total' <<<"$out")" 0
expect_eq "nothing from the refused scrape" "$(grep -c 'gpuaas_model="nokey"' <<<"$out")" 0
expect_match "successful scrapes are counted" "$(grep '^gpuaas_gateway_scrapes_total{model="pair",result="ok"}' <<<"$out")" ' [1-9][0-9]*$'

# valid exposition text: every line a comment or a well-formed sample; one TYPE (and HELP)
# per family, before its samples; a family's samples together; no series twice
cat >"$TMP/promcheck.py" <<'PY'
import re, sys
name = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
lab = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
sample = re.compile(r'^(%s)(\{(?:%s)(?:,%s)*,?\}|\{\})? ([^ ]+)( -?[0-9]+)?$' % (name, lab, lab))
typed, helped, seen_samples, done, series = {}, set(), set(), set(), set()
cur, errs = None, []
def family(n):
    for s in ('_bucket', '_sum', '_count', '_total', '_created'):
        if n.endswith(s) and n[:-len(s)] in typed: return n[:-len(s)]
    return n
for i, l in enumerate(sys.stdin.read().split('\n')[:-1], 1):
    if l.startswith('# TYPE ') or l.startswith('# HELP '):
        parts = l.split(' ', 3)
        f = parts[2]
        if l.startswith('# TYPE '):
            if f in typed: errs.append('%d: second TYPE for %s' % (i, f))
            if f in seen_samples: errs.append('%d: TYPE after samples of %s' % (i, f))
            if parts[3] not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'): errs.append('%d: type %s' % (i, parts[3]))
            typed[f] = parts[3]
        else:
            if f in helped: errs.append('%d: second HELP for %s' % (i, f))
            helped.add(f)
        continue
    if l.startswith('#'): continue
    m = sample.match(l)
    if not m: errs.append('%d: not a sample: %r' % (i, l)); continue
    try: float(m.group(3))
    except ValueError: errs.append('%d: value %r' % (i, m.group(3)))
    f = family(m.group(1))
    if f != cur:
        if f in done: errs.append('%d: samples of %s apart' % (i, f))
        if cur: done.add(cur)
        cur = f
    seen_samples.add(f)
    key = m.group(1) + (m.group(2) or '')
    if key in series: errs.append('%d: series twice: %s' % (i, key))
    series.add(key)
print('\n'.join(errs[:10]) or 'valid')
sys.exit(1 if errs else 0)
PY
expect_eq "the daemon's /metrics is valid exposition text" "$(python3 "$TMP/promcheck.py" <<<"$out")" valid

# live numbers: a stream held open on one replica shows as 1 request running there
KEY=$(api POST /api/v1/keys -d '{"name":"m","tier":"open"}' | sed '$d' | jq -r .key)
curl -s -N -m 30 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"model":"pair-model","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"SLOW hold"}]}' \
  "$GPUAAS_SERVER/v1/chat/completions" >/dev/null &
SPID=$!
sum_running() { local a b; a=$(value "$R0"); b=$(value "$R1"); [[ "$(awk -v a="$a" -v b="$b" 'BEGIN {print a + b}')" == "$1" ]]; }
check "a held request shows as vllm:num_requests_running 1 on its replica" within 10 sum_running 1
kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null
check "and 0 once it ends" within 10 sum_running 0

# numbers print exactly (issue 16: %g printed 600Mi as 6.29146e+08 and token bounds as
# le="1.04858e+06"); the whole of what the daemon itself writes has no exponent
cat >"$TMP/exact.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: exact}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 1500m}
      - {name: memory, nominalQuota: 600Mi}
YAML
check "apply a ClusterQueue of 600Mi" "$G" apply -f "$TMP/exact.yaml"
curl -s -m 10 -o /dev/null -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"model":"pair-model","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}' "$GPUAAS_SERVER/v1/chat/completions"
out=$(metrics)
nominal() { awk -v p="kueue_cluster_queue_nominal_quota{cohort=\"${3:-}\",cluster_queue=\"$1\",flavor=\"h100\",resource=\"$2\"} " \
  'index($0, p) == 1 {print $NF}' <<<"$out"; }
expect_eq "600Mi of quota is 629145600 on /metrics" "$(nominal exact memory)" 629145600
expect_eq "1500m is 1.5" "$(nominal exact cpu)" 1.5
expect_eq "128Gi is 137438953472" "$(nominal team-a memory lab)" 137438953472
expect_match "token histogram bounds are whole numbers: 1048576" \
  "$(grep -c '^gen_ai_client_token_usage_bucket{.*gen_ai_token_type="input",le="1048576"} ' <<<"$out")" '^[1-9]'
expect_match "and 4194304" "$(grep -c '^gen_ai_client_token_usage_bucket{.*,le="4194304"} ' <<<"$out")" '^[1-9]'
expect_eq "no exponent anywhere in the daemon's own samples" \
  "$(grep -v '^#' <<<"$out" | grep -v '^vllm:' | grep -cE '(le="|} )[-+]?[0-9.]+e[-+]?[0-9]')" 0

# a replica whose server died is not ready: what it reported goes
kill "${FAKE_PIDS[1]}" 2>/dev/null
check "a replica that is not ready drops out of /metrics" within 20 hasnt "$R1"
check "the other stays" has "$R0"
expect_eq "still valid exposition text" "$(metrics | python3 "$TMP/promcheck.py")" valid

kill "${FAKE_PIDS[@]}" 2>/dev/null
finish
