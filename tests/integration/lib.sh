#!/usr/bin/env bash
# Shared helpers for the integration tests: each test starts the real daemon on a
# free loopback port with a temporary data directory and drives it with curl and
# the CLI. Sourced by tests/integration/*.sh; every test prints "ok NAME" or
# "FAIL NAME: why" lines and exits non-zero when anything failed.
set -uo pipefail

: "${GPUAAS_BIN:?set GPUAAS_BIN to the gpuaas binary}"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FAILS=0
PASSES=0
TMP=$(mktemp -d /tmp/gpuaas-it.XXXXXX)
DAEMON_PID=""

# Pods run in the sandbox (docs/security.md), as CI does: it runs as root. Each test file
# gets cgroups of its own (removed by finish); RUN_EXTRA adds settings to the run: section
# ("namespaces: {lab: {hostPaths: [/x]}}"). Without root the sandbox cannot switch uids:
# the tests then say so and run pods unsandboxed, never silently.
CG_PARENT=gpuaas-it-${TMP##*.}
if [[ $(id -u) -ne 0 ]]; then
  echo "NOTE: not root: pods run unsandboxed (run.sandbox: none); CI runs these tests as root, sandboxed"
fi
run_section() {
  if [[ $(id -u) -eq 0 ]]; then
    echo "run: {cgroupParent: $CG_PARENT${RUN_EXTRA:+, $RUN_EXTRA}}"
  else
    echo "run: {sandbox: none${RUN_EXTRA:+, $RUN_EXTRA}}"
  fi
}
# A folder pods of the test may write to (allow it with RUN_EXTRA hostPaths and mount it
# with hostpath_volume): the host is read-only inside the sandbox, and so is $TMP.
SHARED=$TMP/shared
mkdir -p "$SHARED" && chmod 1777 "$SHARED"
# hostpath_volume: the lines that mount $SHARED at the same path in a job() (pass as the
# 7th argument of job)
hostpath_volume() {
  printf '      volumes:\n      - name: shared\n        hostPath: {path: %s}\n' "$SHARED"
}

ok()   { echo "ok $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
# check NAME CMD...: ok when CMD succeeds
check() { local name=$1; shift; if "$@" >/dev/null 2>&1; then ok "$name"; else fail "$name: $*"; fi; }
# expect_eq NAME GOT WANT
expect_eq() { if [[ "$2" == "$3" ]]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi; }
# expect_match NAME TEXT REGEX
expect_match() { if [[ "$2" =~ $3 ]]; then ok "$1"; else fail "$1: '$2' does not match /$3/"; fi; }

# sign_in JAR TOKEN: sign in on the portal as a browser does (the /login form with its
# double-submit cookie, then the token); prints the status (303 when signed in).
sign_in() {
  local jar=$1 tok=$2 login
  login=$(curl -s -c "$jar" -b "$jar" "$GPUAAS_SERVER/login" | grep -o 'name="_login" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
  curl -s -o /dev/null -w '%{http_code}' -c "$jar" -b "$jar" --data-urlencode "_login=$login" \
    --data-urlencode "token=$tok" "$GPUAAS_SERVER/login"
}
# csrf_of_jar JAR: the CSRF token of a signed-in portal session (the page's meta tag)
csrf_of_jar() { curl -s -b "$1" "$GPUAAS_SERVER/" | grep -o 'name="csrf-token" content="[^"]*"' | sed 's/.*content="//; s/"$//'; }
# cookie_of JAR: the portal session's cookie value
cookie_of() { awk '$6 == "gx_session" { print $7 }' "$1"; }

# queues CQ CPU GPUS [SPEC_LINE]: the one-flavor set-up most tests start from, on stdout:
# ResourceFlavor h100, ClusterQueue CQ (open to every namespace, CPU cpus and GPUS GPUs of
# nominal quota, SPEC_LINE such as "queueingStrategy: StrictFIFO" added to its spec) and
# LocalQueue lab/q pointing at it. Append further documents after a "---".
queues() {
  cat <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $1}
spec:
  namespaceSelector: {}${4:+
  $4}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "$2"}
      - {name: nvidia.com/gpu, nominalQuota: "$3"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lab}
spec: {clusterQueue: $1}
YAML
}

# write_config NAME [NODE_FILE] [MANIFEST...]: a gpuaas.yaml in $TMP listening on port 0
write_config() {
  local cfg=$TMP/$1.yaml node=${2:-$ROOT/examples/demo/node.yaml}; shift 2 || shift $#
  {
    echo "apiVersion: gpuaas.dev/v1alpha1"
    echo "kind: ServerConfig"
    echo "listen: 127.0.0.1:0"
    echo "dataDir: $TMP/data"
    echo "inventory: {source: simulated, nodes: $node}"
    if (($#)); then echo "manifests:"; for m in "$@"; do echo "- $m"; done; fi
    echo "limits: {maxBodyBytes: ${MAX_BODY:-65536}}"
    run_section
  } > "$cfg"
  echo "$cfg"
}

# start_daemon CONFIG: start, wait until it serves, export GPUAAS_SERVER/TOKEN (first start)
start_daemon() {
  local cfg=$1
  rm -f "$TMP/data/serve.json"
  "$GPUAAS_BIN" serve --config "$cfg" >>"$TMP/serve.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 1 100); do
    [[ -s "$TMP/data/serve.json" ]] && break
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then echo "daemon died:"; cat "$TMP/serve.log"; return 1; fi
    sleep 0.1
  done
  export GPUAAS_SERVER
  GPUAAS_SERVER=$(jq -r .url "$TMP/data/serve.json")
  local t
  t=$(grep -o 'gpt_[A-Za-z0-9_]*' "$TMP/serve.log" | tail -1)
  if [[ -z "${ADMIN_TOKEN:-}" ]]; then ADMIN_TOKEN=$t; fi
  export GPUAAS_TOKEN=$ADMIN_TOKEN
}

stop_daemon() {   # polite stop
  [[ -n "$DAEMON_PID" ]] || return 0
  kill -TERM "$DAEMON_PID" 2>/dev/null
  wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=""
}

crash_daemon() {  # kill -9
  [[ -n "$DAEMON_PID" ]] || return 0
  kill -KILL "$DAEMON_PID" 2>/dev/null
  wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=""
}

# api METHOD PATH [CURL ARGS...]: prints the body, then the status on the last line
api() {
  local m=$1 p=$2; shift 2
  curl -s -X "$m" -H "Authorization: Bearer ${TOKEN:-$GPUAAS_TOKEN}" -w '\n%{http_code}' "$@" "$GPUAAS_SERVER$p"
}
status_of() { tail -n1 <<<"$1"; }
body_of()   { sed '$d' <<<"$1"; }

# wl_field KEY JQ: one field of a workload as the admin sees it
wl_field() { api GET "/api/v1/workloads/$1" | sed '$d' | jq -r "$2"; }

# until SECONDS CMD...: run CMD every 0.1 s until it succeeds (0) or SECONDS pass (1).
# Tests wait on the condition they need, never on a fixed sleep.
until_ok() {
  local secs=$1; shift
  for _ in $(seq 1 $((secs * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
# wl_says KEY REGEX: the workload's message matches (the scheduler has looked at it)
wl_says() { [[ "$(wl_field "$1" .message)" =~ $2 ]]; }
# log_has FILE REGEX
log_has() { grep -qE "$2" "$1" 2>/dev/null; }

# wait_phase KEY PHASE [SECONDS]
wait_phase() {
  local key=$1 want=$2 secs=${3:-20} got=""
  for _ in $(seq 1 $((secs * 10))); do
    got=$(wl_field "$key" .phase 2>/dev/null)
    [[ "$got" == "$want" ]] && return 0
    sleep 0.1
  done
  echo "  $key is '$got', not '$want' after ${secs}s" >&2
  return 1
}

# job NAME NS QUEUE GPUS SCRIPT [EXTRA LABEL LINES] [POD SPEC LINES] : a batch/v1 Job on
# stdout; POD SPEC LINES (e.g. "$(hostpath_volume)") go under spec.template.spec, and when
# they declare the volume "shared" the container mounts it at $SHARED.
job() {
  local name=$1 ns=$2 queue=$3 gpus=$4 script=$5 labels=${6:-} podlines=${7:-} mounts=""
  [[ "$podlines" == *"name: shared"* ]] && mounts="        volumeMounts: [{name: shared, mountPath: $SHARED}]"
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $name
  namespace: $ns
  labels:
    kueue.x-k8s.io/queue-name: $queue
$labels
spec:
  backoffLimit: 0
  template:
    spec:
      terminationGracePeriodSeconds: ${GRACE:-2}
$podlines
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", $(jq -Rn --arg s "$script" '$s')]
$mounts
        resources:
          requests:
            cpu: "1"
            nvidia.com/gpu: "$gpus"
YAML
}

# The project's OpenAI-compatible fake, built next to $GPUAAS_BIN: it stands in for vLLM
# (no GPU or model here). start_fake NAME ARGS...: start one with ARGS and wait for its
# port, which is then in $TMP/NAME.port; its log is $TMP/NAME.log, its pid is appended to
# FAKE_PIDS (finish stops it with everything else under $TMP).
FAKE_OPENAI=$(cd "$(dirname "$GPUAAS_BIN")" && pwd)/fake-openai
# Pods run it as their namespace's uid, on the host's files as they are, with a /tmp of
# their own: a checkout under /tmp, or in a folder other users cannot enter (/root), is
# out of their sight. Then the tests use a copy in a folder every uid can reach.
if [[ $(id -u) -eq 0 && -x "$FAKE_OPENAI" ]] &&
   { [[ "$FAKE_OPENAI" == /tmp/* ]] || ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$FAKE_OPENAI" 2>/dev/null; }; then
  PODS_BIN=$(mktemp -d /var/tmp/gpuaas-it-bin.XXXXXX)
  chmod 755 "$PODS_BIN" && cp "$FAKE_OPENAI" "$PODS_BIN/" && FAKE_OPENAI=$PODS_BIN/fake-openai
fi
FAKE_PIDS=()
start_fake() {
  local name=$1; shift
  [[ -x "$FAKE_OPENAI" ]] || { echo "no $FAKE_OPENAI (make $(dirname "$GPUAAS_BIN")/fake-openai)"; return 1; }
  "$FAKE_OPENAI" --port-file "$TMP/$name.port" "$@" >"$TMP/$name.log" 2>&1 &
  FAKE_PIDS+=($!)
  for _ in $(seq 1 100); do [[ -s "$TMP/$name.port" ]] && return 0; sleep 0.05; done
  echo "fake $name did not start: $(tail -3 "$TMP/$name.log")"
  return 1
}

# The test's cgroups (every hierarchy), once their processes are gone.
remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/"$CG_PARENT" /sys/fs/cgroup/"$CG_PARENT"; do
    [[ -d "$d" ]] || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
      [[ -d "$d" ]] || break
      sleep 0.1
    done
  done
}

finish() {
  stop_daemon
  if ((FAILS > 0)) && [[ -f "$TMP/serve.log" ]]; then
    echo "--- daemon log (last 80 lines) ---"; tail -n 80 "$TMP/serve.log"; echo "---"
  fi
  # stop anything a test left running (the shims live in their own sessions)
  pkill -f "$TMP" 2>/dev/null || true
  [[ -n "${PODS_BIN:-}" ]] && pkill -f "$PODS_BIN" 2>/dev/null
  remove_cgroups
  rm -rf "$TMP" ${PODS_BIN:+"$PODS_BIN"}
  echo "$PASSES passed, $FAILS failed"
  ((FAILS == 0))
}
