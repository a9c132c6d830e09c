#!/usr/bin/env bash
# cli_help: the CLI's user-facing contract that needs no daemon.
#   - every command's --help exits 0 and lists its options and an example;
#   - a bad flag, a missing argument or a bad -o exits 2 with the usage on stderr;
#   - an unreachable server gives the friendly message and exit 1;
#   - a -f file over 4 MiB is refused before anything is sent.
# Usage: GPUAAS_BIN=build/gpuaas tests/integration/cli_help.sh
# Prints "ok NAME" / "FAIL NAME" per check; exits 1 if any failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
BIN=${GPUAAS_BIN:-$here/../../build/gpuaas}
if [[ ! -x $BIN ]]; then
  echo "FAIL setup: $BIN is not an executable (set GPUAAS_BIN)"
  exit 1
fi
unset GPUAAS_SERVER GPUAAS_TOKEN GPUAAS_NAMESPACE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

ok()   { echo "ok $1"; }
fail() { echo "FAIL $1${2:+: $2}"; failed=1; }

# expect_rc NAME WANT_RC -- command...: runs it, keeps stdout/stderr in $tmp/out,$tmp/err.
expect_rc() {
  local name=$1 want=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$name" "exit $rc, want $want; stderr: $(head -c 300 "$tmp/err")"
    return 1
  fi
  return 0
}

# expect NAME WANT_RC [out|err TEXT] -- command...: exit status and, optionally, a fixed
# text that must appear on stdout or stderr. Prints ok/FAIL itself.
expect() {
  local name=$1 want=$2 stream="" text=""
  shift 2
  if [[ $1 != -- ]]; then stream=$1 text=$2; shift 2; fi
  expect_rc "$name" "$want" "$@" || return 1
  if [[ -n $text ]] && ! grep -qF -- "$text" "$tmp/$stream"; then
    fail "$name" "no '$text' on std$stream: $(head -c 300 "$tmp/$stream")"
    return 1
  fi
  ok "$name"
}

# Options each command must document (besides the common ones checked for all).
declare -A OPTS=(
  [apply]="-f --filename -o --output"
  [submit]="-f --filename -o --output"
  [ls]="-n --namespace -A --all-namespaces --state --queue --cluster-queue -o --output"
  [show]="-n --namespace -o --output"
  [logs]="-n --namespace -f --follow --pod"
  [cancel]="-n --namespace -o --output"
  [drain]="-n --namespace --timeout"
  [delete]="-n --namespace"
  [queues]="-n --namespace -o --output"
  [gpus]="-o --output"
  [get]="-n --namespace -o --output"
  [users create]="--namespaces --admin -o --output"
  [users ls]="-o --output"
  [users delete]="-o --output"
  [whoami]="-o --output"
  [usage]="--group-by --since --user -o --output"
  [reserve]="-n --namespace --cluster-queue --flavor --gpus --start --end --weekly --tz --lead-time --no-show -o --output"
  [reservations]="-n --namespace --from --to -o --output"
  [unreserve]=""
)
COMMON="--server --token --token-file -h --help"

for cmd in "${!OPTS[@]}"; do
  read -r -a words <<<"$cmd"
  name="help-${cmd// /-}"
  if expect_rc "$name" 0 -- "$BIN" "${words[@]}" --help; then
    missing=""
    for o in ${OPTS[$cmd]} $COMMON; do
      grep -qE -- "(^|[ ,])$o([ ,=]|$)" "$tmp/out" || missing+=" $o"
    done
    grep -q "^usage: gpuaas $cmd" "$tmp/out" || missing+=" usage-line"
    grep -qi "example" "$tmp/out" || missing+=" example"
    if [[ -n $missing ]]; then fail "$name" "missing:$missing"; else ok "$name"; fi
  fi
  name="badflag-${cmd// /-}"
  if expect_rc "$name" 2 -- "$BIN" "${words[@]}" --no-such-flag; then
    if grep -q -- "--no-such-flag" "$tmp/err" && grep -q "^usage: gpuaas $cmd" "$tmp/err"; then ok "$name"
    else fail "$name" "stderr does not name the flag or show the usage"; fi
  fi
done

# -h works too, and the top-level list names every command.
expect help-short 0 out "usage: gpuaas ls" -- "$BIN" ls -h
if expect_rc toplevel-help 0 -- "$BIN" --help; then
  missing=""
  for c in apply submit ls show logs cancel drain delete queues gpus get users whoami reserve reservations unreserve; do
    grep -qE "^  $c( |$)" "$tmp/out" || missing+=" $c"
  done
  if [[ -n $missing ]]; then fail toplevel-help "missing:$missing"; else ok toplevel-help; fi
fi
expect users-help 0 out "users create" -- "$BIN" users --help
expect users-alone 2 err "usage: gpuaas users" -- "$BIN" users
expect users-unknown 2 err "frobnicate" -- "$BIN" users frobnicate

# Usage mistakes other than flags.
expect missing-arg 2 err "missing argument" -- "$BIN" show
expect extra-arg 2 err "unexpected argument 'c/d'" -- "$BIN" show a/b c/d
expect bad-output 2 err "'xml'" -- "$BIN" ls -o xml
expect missing-value 2 err "needs a value" -- "$BIN" ls -n
expect bad-ref 2 err "a/b/c" -- "$BIN" show a/b/c
expect apply-no-file 2 err "-f FILE" -- "$BIN" apply
expect ls-n-and-A 2 err "not both" -- "$BIN" ls -n team-a -A
expect bad-state 2 err "sleeping" -- "$BIN" ls --state sleeping
expect bad-pod 2 err "--pod" -- "$BIN" logs --pod x a/b
expect users-create-no-ns 2 err "--namespaces" -- "$BIN" users create bob
# the gateway's: the hint names a command that exists (get tiers), usage takes --user
expect keys-create-no-tier 2 err "gpuaas get tiers lists them" -- "$BIN" keys create laptop
expect get-help-gateway-kinds 0 out "tiers and models" -- "$BIN" get --help
expect usage-help-user 0 out "--user NAME" -- "$BIN" usage --help
expect usage-user-empty 2 err "--user wants a user name" -- "$BIN" usage --user ""

# A usage mistake gets the usage line and where the help is, not the whole help.
if expect_rc short-usage 2 -- "$BIN" submit; then
  if grep -q "^usage: gpuaas submit -f FILE" "$tmp/err" && grep -qF "see gpuaas submit --help" "$tmp/err" &&
     ! grep -q "^Options:" "$tmp/err"; then ok short-usage
  else fail short-usage "stderr: $(cat "$tmp/err")"; fi
fi
expect drain-help 0 out "--timeout DURATION" -- "$BIN" drain --help
expect delete-help 0 out "usage: gpuaas delete NS/NAME" -- "$BIN" delete --help
expect drain-bad-timeout 2 err "--timeout wants a duration" -- "$BIN" drain --timeout soon --server http://127.0.0.1:1
# sim: its help lists the replays; -o is a format there too, a file is --out
if expect_rc sim-help 0 -- "$BIN" sim --help; then
  if grep -q "gpuaas sim trace  *replay" "$tmp/out" && grep -q "gpuaas sim scenario  *replay" "$tmp/out"; then ok sim-help
  else fail sim-help "no subcommands: $(cat "$tmp/out")"; fi
fi
expect sim-scenario-help 0 out "--out FILE" -- "$BIN" sim scenario --help
expect sim-scenario-no-file 2 err "see gpuaas sim scenario --help" -- "$BIN" sim scenario
expect unknown-command 2 err "see gpuaas --help" -- "$BIN" frobnicate
scen=$here/../scenarios/cohort-borrowing.yaml
(cd "$tmp" && "$BIN" sim scenario -o json "$scen" >"$tmp/scen.out" 2>"$tmp/scen.err")
if [[ $? -eq 0 && ! -e "$tmp/json" ]] && tail -n1 "$tmp/scen.out" | grep -q '"summary"'; then ok sim-scenario-o-json
else fail sim-scenario-o-json "rc or a file named json: $(ls "$tmp") $(head -c 200 "$tmp/scen.err")"; fi
expect sim-scenario-o-bad 2 err "unknown output format 'yaml'" -- "$BIN" sim scenario -o yaml "$scen"
if "$BIN" sim scenario --out "$tmp/events.jsonl" "$scen" >/dev/null 2>&1 && grep -q '"summary"' "$tmp/events.jsonl"; then
  ok sim-scenario-out-file
else fail sim-scenario-out-file "no events in --out FILE"; fi
# gpus mig: the one subcommand is named, whatever comes after "mig"
expect gpus-mig-alone 2 err "usage: gpuaas gpus mig apply CONFIG" -- "$BIN" gpus mig
expect gpus-mig-help 0 out "usage: gpuaas gpus mig apply CONFIG" -- "$BIN" gpus mig --help
expect gpus-mig-unknown 2 err "unknown subcommand 'ls'" -- "$BIN" gpus mig ls
expect gpus-help-mig 0 out "gpus mig apply" -- "$BIN" gpus --help

# An unreachable server: a loopback port nothing listens on.
port=1
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 1)
fi
url="http://127.0.0.1:$port"
for args in "ls" "whoami" "queues" "show team-a/x" "logs team-a/x" "gpus" "get cq" "get tiers" "usage --user alice"; do
  read -r -a words <<<"$args"
  name="unreachable-${args// /-}"
  if expect_rc "$name" 1 -- "$BIN" "${words[@]}" --server "$url" --token t; then
    want="error: cannot reach gpuaas at $url: is the daemon running? (start it with: make run)"
    if grep -qxF "$want" "$tmp/err"; then ok "$name"; else fail "$name" "stderr: $(cat "$tmp/err")"; fi
  fi
done
GPUAAS_SERVER=$url expect unreachable-env 1 err "cannot reach gpuaas at $url" -- "$BIN" ls

# Files: too big, missing, empty (all refused before anything is sent).
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' 'a' >"$tmp/big.yaml"
expect file-too-big 1 err "4 MiB" -- "$BIN" apply -f "$tmp/big.yaml" --server "$url"
expect file-missing 1 err "$tmp/nope.yaml" -- "$BIN" submit -f "$tmp/nope.yaml" --server "$url"
: >"$tmp/empty.yaml"
expect file-empty 1 err "empty" -- "$BIN" apply -f "$tmp/empty.yaml" --server "$url"
expect token-file-missing 1 err "$tmp/none" -- "$BIN" whoami --token-file "$tmp/none" --server "$url"
expect bad-scheme 1 err "ftp://x" -- "$BIN" whoami --server ftp://x

exit $failed
