#!/usr/bin/env bash
# first_hour: what a new user does in their first hour, as README.md writes it.
#   - the README tour's commands, taken from README.md itself (so the test fails when the
#     README drifts), run as written on a fresh daemon: GPUAAS_SERVER is set before use,
#     the second copy of the demo job waits (position 1), cancel works where it stands;
#   - the model part of the tour: the fake model server answers through the gateway;
#   - a first start that cannot listen creates no admin token; the next start prints one,
#     and a restart keeps it;
#   - Ctrl-C (SIGINT) or SIGTERM leaves running pods running, and the next start re-adopts
#     them; gpuaas drain stops everything; gpuaas delete removes a finished workload;
#   - logs -f on a pending workload says it waits; users ls shows CREATED; get templates;
#     apply --help names every kind the daemon knows.
# Real daemon, real processes, real HTTP over loopback.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
BIN_DIR=$TMP/bin
mkdir -p "$BIN_DIR" && ln -s "$G" "$BIN_DIR/gpuaas"

# ---- 1. a first start on a port in use: no token is created ---------------------------
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TMP/busy.port" &
BUSY_PID=$!
until_ok 5 test -s "$TMP/busy.port" || fail "a port in use"
busy=$(cat "$TMP/busy.port")
cfg=$(write_config fh "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml" \
  "$ROOT/examples/templates/batch-training.yaml")
sed "s/^listen: .*/listen: 127.0.0.1:$busy/" "$cfg" >"$TMP/busy.yaml"
"$G" serve --config "$TMP/busy.yaml" >"$TMP/busy.log" 2>&1
expect_eq "a start on a port in use fails" "$?" 1
expect_eq "and prints no token" "$(grep -c 'gpt_' "$TMP/busy.log")" 0
kill "$BUSY_PID" 2>/dev/null; wait "$BUSY_PID" 2>/dev/null
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
expect_match "the next start prints the admin token" "$ADMIN_TOKEN" '^gpt_'
check "and it works" "$G" whoami

# ---- 2. the README tour, as written ----------------------------------------------------
# block N of README.md: the Nth ``` block after the heading "## A five-minute tour"
readme_block() {
  awk -v want="$1" '/^## A five-minute tour/{on=1} on && /^```/{n++; next} on && n==2*want-1' "$ROOT/README.md"
}
tour=$(readme_block 1)
export_line=$(grep -m1 '^export ' <<<"$tour")
expect_match "the tour sets GPUAAS_SERVER" "$export_line" 'GPUAAS_SERVER=http://127\.0\.0\.1:8080'
expect_match "and GPUAAS_TOKEN" "$export_line" 'GPUAAS_TOKEN=gpt_'
first_use=$(grep -n 'GPUAAS_SERVER' "$ROOT/README.md" | grep -v 'GPUAAS_SERVER=' | head -1 | cut -d: -f1)
set_at=$(grep -n 'GPUAAS_SERVER=' "$ROOT/README.md" | head -1 | cut -d: -f1)
check "GPUAAS_SERVER is set before the README uses it" test "${set_at:-999999}" -lt "${first_use:-999999}"

# run_line LINE: one tour command, its comment dropped, with the test's gpuaas in PATH
# label LINE: a command without its comment, for the check's name
label() { sed 's/ *#.*$//; s/ *$//' <<<"$1"; }
run_line() {
  local cmd=${1%%   #*}
  (cd "$ROOT" && PATH=$BIN_DIR:$PATH bash -c "set -o pipefail; $cmd") >"$TMP/line.out" 2>&1
}
n=0
while IFS= read -r line; do
  [[ -z $line || $line == export* ]] && continue
  n=$((n + 1))
  if [[ $line == "gpuaas logs -f"* ]]; then
    # the job's 10 steps take 30 s; the following ends with it
    run_line "timeout 60 ${line%%   #*}"
  else
    run_line "$line"
  fi
  rc=$?
  expect_eq "tour: $(label "$line")" "$rc" 0
  case $line in
    "gpuaas apply"*) expect_match "tour: the demo's queues are unchanged" "$(cat "$TMP/line.out")" unchanged ;;
    "sed s/train-1/train-2/"*)
      check "tour: train-1 runs" wait_phase team-a/train-1 Running 10
      check "tour: train-2 waits" wl_says team-a/train-2 'waiting for 2 nvidia.com/gpu' ;;
    "gpuaas ls"*)
      expect_match "tour: ls says why train-2 waits, position 1" \
        "$(grep train-2 "$TMP/line.out")" 'Pending .* 1 +waiting for 2 nvidia.com/gpu' ;;
    "gpuaas cancel"*) expect_eq "tour: the waiting one is cancelled" "$(wl_field team-a/train-2 .phase)" Deactivated ;;
    "gpuaas logs -f"*) expect_eq "tour: logs -f follows to the end" "$(tail -n1 "$TMP/line.out")" done ;;
  esac
done <<<"$tour"
check "the tour has its commands" test "$n" -ge 8

# the teammate's token
users=$(readme_block 2)
run_line "$(grep -m1 '^gpuaas users create' <<<"$users")"
expect_eq "tour: users create" "$?" 0
expect_match "tour: it prints the token" "$(cat "$TMP/line.out")" 'gpt_'

# the model: the README's lines, with the repository the pods can reach (lib.sh) and the
# printed key in place of gpa_...
models=$(readme_block 3)
FR=$(mktemp -d /var/tmp/gpuaas-fh.XXXXXX) && chmod 755 "$FR" && mkdir -p "$FR/build" && cp "$FAKE_OPENAI" "$FR/build/"
key=""
# the README's curl spans two lines (a trailing backslash): joined here
curl_cmd=$(sed -n '/^curl /{N;s/\\\n */ /;p}' <<<"$models")
while IFS= read -r line; do
  [[ -z $line || $line == " "* ]] && continue
  if [[ $line == curl* ]]; then
    cmd=${curl_cmd//gpa_.../$key}
    cmd=${cmd%%   #*}
    check "tour: the model answers through the gateway (after 503 starting)" until_ok 40 \
      bash -c "$cmd -sf | grep -q tok0"
    continue
  fi
  [[ $line == sed* ]] && line=${line//\$PWD/$FR}
  run_line "$line"
  expect_eq "tour: $(label "$line")" "$?" 0
  [[ $line == "gpuaas keys create"* ]] && key=$(grep -o 'gpa_[A-Za-z0-9_]*' "$TMP/line.out" | head -1)
done <<<"$models"
expect_match "tour: a key was printed" "$key" '^gpa_'
rm -rf "$FR"

# ---- 3. stopping: pods survive Ctrl-C and SIGTERM, drain stops everything ---------------
job long team-a main 1 'echo up; sleep 300' > "$TMP/long.yaml"
"$G" submit -f "$TMP/long.yaml" >/dev/null
wait_phase team-a/long Running 20 >/dev/null
pid=$(wl_field team-a/long '.pods[0].pid')
for sig in INT TERM; do
  kill -"$sig" "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=""
  check "SIG$sig: the daemon stopped, the pod runs on" kill -0 "$pid"
  start_daemon "$cfg" || { fail "restart"; finish; exit 1; }
  expect_eq "SIG$sig: the pod is re-adopted" "$(wl_field team-a/long '.pods[0].pid')/$(wl_field team-a/long .phase)" "$pid/Running"
done
expect_eq "a restart prints no new token" "$(grep -c 'admin token (shown once' "$TMP/serve.log")" 1
check "the first token still works" "$G" whoami

job waiter team-b main 2 'echo later' > "$TMP/waiter.yaml"
"$G" submit -f "$TMP/waiter.yaml" >/dev/null
check "waiter waits" until_ok 10 wl_says team-b/waiter 'waiting'
timeout 2 "$G" logs -f team-b/waiter >/dev/null 2>"$TMP/wait.err"
expect_match "logs -f on a pending workload says it waits" "$(cat "$TMP/wait.err")" 'team-b/waiter is waiting to start \(waiting for 2'
BOB=$(grep -o 'gpt_[A-Za-z0-9_]*' <<<"$("$G" users create bob --namespaces team-b 2>/dev/null)")
out=$(GPUAAS_TOKEN=$BOB "$G" drain 2>&1); rc=$?
expect_eq "drain of everything is an admin's" "$rc" 2
expect_match "and says so" "$out" 'pass -n NS'
out=$("$G" drain --timeout 30s 2>&1); rc=$?
expect_eq "drain exit" "$rc" 0
expect_match "drain cancels what is active" "$out" 'cancelled team-a/long'
expect_match "drain says when nothing runs" "$out" 'drained: [0-9]+ cancelled, none running'
check "the pod is gone" until_ok 5 bash -c "! ps -o stat= -p $pid | grep -qv '^Z'"
expect_eq "nothing active is left" "$(api GET /api/v1/workloads | sed '$d' | jq '[.items[] | select(.state=="Pending" or .state=="Admitted")] | length')" 0
out=$("$G" delete team-a/train-1 2>&1)
expect_eq "delete a finished workload" "$out" "workload team-a/train-1 deleted"
expect_eq "it is gone" "$(status_of "$(api GET /api/v1/workloads/team-a/train-1)")" 404

# ---- 4. the rest of the first hour -----------------------------------------------------
expect_match "users ls shows CREATED" "$("$G" users ls | awk '$1=="admin"{print $NF}')" '^[0-9]+(s|m|h)'
expect_match "get templates lists them" "$("$G" get templates)" 'batch-training +job'
printf 'apiVersion: x/v1\nkind: NoSuchKind\nmetadata: {name: x}\n' >"$TMP/bogus.yaml"
known=$("$G" apply -f "$TMP/bogus.yaml" 2>&1 | sed -n 's/.*(known: \(.*\)).*/\1/p')
check "the daemon lists its kinds" test -n "$known"
help=$("$G" apply --help)
missing=""
for k in ${known//,/ }; do grep -qw "$k" <<<"$help" || missing+=" $k"; done
expect_eq "apply --help names every kind the daemon knows" "$missing" ""
finish
