#!/usr/bin/env bash
# Tenant isolation (docs/security.md): a table of escapes, each a team-a pod trying one
# thing it must not be able to do, and the same pods doing what they may. Needs root (CI
# runs as root): the sandbox switches each pod to its namespace's uid.
#
# GPUs: this machine has none, so the test makes fake device nodes with mknod (major 195,
# as NVIDIA's) in a folder it points the daemon at (run.deviceDir). The nodes cannot be
# opened (no driver behind them); what is tested is which of them a pod can see and what
# its device cgroup allows.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
if [[ $(id -u) -ne 0 ]]; then
  fail "isolation: needs root (the sandbox switches uids); run as root, as CI does"
  finish; exit 1
fi

DATA=$TMP/data
DEV=$TMP/dev
mkdir -p "$DEV" "$TMP/allowed" "$TMP/denied"
mknod "$DEV/nvidia0" c 195 0 && mknod "$DEV/nvidia1" c 195 1 && mknod "$DEV/nvidiactl" c 195 255 ||
  { fail "mknod of fake GPU nodes"; finish; exit 1; }
chmod 666 "$DEV"/nvidia*
echo visible > "$TMP/allowed/data.txt"
echo secret > "$TMP/denied/data.txt"
# a setuid-root program the pod can run: it must not make the pod root (no_new_privs)
cp /usr/bin/id "$TMP/allowed/id-suid" && chmod 4755 "$TMP/allowed/id-suid"

RUN_EXTRA="deviceDir: $DEV, pidsLimit: 64, namespaces: {team-a: {hostPaths: [{path: $TMP/allowed, readOnly: true}, $SHARED]}}"
cfg=$(write_config iso "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
expect_match "the banner says pods are sandboxed" "$(grep 'sandbox:' "$TMP/serve.log" | tail -1)" "bubblewrap, uids"

# volume lines for a job(): $SHARED read-write at its own path, $TMP/allowed read-only at /in
vols() {
  printf '      volumes:\n      - name: shared\n        hostPath: {path: %s}\n      - name: in\n        hostPath: {path: %s}\n' \
    "$SHARED" "$TMP/allowed"
}
# ajob NAME GPUS SCRIPT [MEMORY LIMIT]: a team-a Job mounting both volumes
ajob() {
  job "$1" team-a main "$2" "$3" "" "$(vols)" |
    sed -e "s|        volumeMounts: \[{name: shared, mountPath: $SHARED}\]|        volumeMounts: [{name: shared, mountPath: $SHARED}, {name: in, mountPath: /in, readOnly: true}]|" \
        -e "s|^          requests:|${4:+          limits: {memory: $4\}\n}          requests:|"
}
# run_pod NAME GPUS SCRIPT [LINES]: submit, wait until it ends; its log on stdout
run_pod() {
  ajob "$@" > "$TMP/$1.yaml"
  "$G" submit -f "$TMP/$1.yaml" >/dev/null || { echo "submit of $1 failed"; return 1; }
  for _ in $(seq 1 200); do
    case "$(wl_field "team-a/$1" .phase)" in Succeeded|Failed) break ;; esac
    sleep 0.1
  done
  "$G" logs "team-a/$1"
}

# ---- a victim in team-b: a log, a working folder, a long-running process ---------------
job victim team-b main 0 'echo team-b-secret-log; echo team-b-file > ./private.txt; exec sleep 300' > "$TMP/victim.yaml"
"$G" submit -f "$TMP/victim.yaml" >/dev/null
check "the victim runs" wait_phase team-b/victim Running 20
for _ in $(seq 1 50); do [[ -s "$DATA/logs/team-b/victim/pod-0.log" ]] && break; sleep 0.1; done
VPID=$(pgrep -u "$(stat -c %u "$DATA/work/team-b/victim")" -x sleep | head -1)
check "the victim's process is visible from the host" test -n "$VPID"

# verdicts WHAT COUNT OUT: a pod printed "NAME ok" or "NAME <other>" per row; every one of
# the COUNT rows ran and said ok
verdicts() {
  local what=$1 count=$2 out=$3 name verdict
  expect_eq "every $what row ran" "$(grep -c '^[a-z0-9-]* [A-Za-z]*$' <<<"$out")" "$count"
  while read -r name verdict; do
    [[ -n "$name" ]] && expect_eq "$what: $name" "$verdict" ok
  done <<<"$out"
}

# ---- the escapes: each line of the pod's output is "NAME ok|ESCAPED" -------------------
read -r -d '' ESCAPES <<SH
t() { if eval "\$2" >/dev/null 2>&1; then echo "\$1 ESCAPED"; else echo "\$1 ok"; fi; }
t secret-key "cat $DATA/secret.key"
t database "cat $DATA/gpuaas.db"
t serve-log "ls $DATA/serve.json $TMP/serve.log"
t other-ns-log "cat $DATA/logs/team-b/victim/pod-0.log"
t other-ns-workdir "cat $DATA/work/team-b/victim/private.txt"
t other-ns-workdir-listing "ls $DATA/work/team-b/victim"
t write-usr "touch /usr/escaped"
t write-etc "touch /etc/escaped"
t write-tmp-of-host "touch $TMP/escaped"
t write-readonly-volume "touch /in/escaped"
t denied-host-path "cat $TMP/denied/data.txt"
t see-victim-process "ps -eo args | grep -q '[s]leep 300'"
t signal-victim "kill -9 $VPID"
t mknod "mknod /tmp/nv c 195 1"
t setuid-root "test \\\$(/in/id-suid -u) = 0"
t become-root "su -c true root </dev/null"
t caps "grep -q 'CapEff:.*[1-9a-f]' /proc/self/status"
t root-group "id -G | tr ' ' '\\n' | grep -qx 0"
SH
verdicts "escape blocked" 18 "$(run_pod escapes 0 "$ESCAPES")"
check "no file written under /usr or /etc" test ! -e /usr/escaped -a ! -e /etc/escaped -a ! -e "$TMP/escaped"
check "the victim survived the kill attempt" kill -0 "$VPID"

# ---- what team-a may do ---------------------------------------------------------------
read -r -d '' ALLOWED <<SH
t() { if eval "\$2" >/dev/null 2>&1; then echo "\$1 ok"; else echo "\$1 DENIED"; fi; }
t write-own-folder "echo mine > ./mine.txt"
t home-is-own-folder "test \"\$HOME\" = \"\$PWD\""
t write-tmp "dd if=/dev/zero of=/tmp/x bs=1k count=64"
t read-host "test -x /bin/sh && cat /etc/os-release"
t read-allowed-volume "grep -q visible /in/data.txt"
t write-shared-volume "echo from-pod > $SHARED/from-pod.txt"
t own-processes-only "test \\\$(ls /proc | grep -c '^[0-9]') -lt 10"
t not-pid-1 "test \\\$\\\$ -ne 1"
SH
verdicts "allowed" 8 "$(run_pod allowed 0 "$ALLOWED")"
expect_eq "allowed pod succeeded" "$(wl_field team-a/allowed .phase)" Succeeded

# identity, seen from outside: a namespace's own uid, never root, never the daemon's
uid_a=$(stat -c %u "$DATA/work/team-a/allowed/mine.txt")
uid_b=$(stat -c %u "$DATA/work/team-b/victim/private.txt")
expect_match "team-a's file is owned by a uid of the range" "$uid_a" '^20000000[0-9][0-9]$'
expect_eq "team-a and team-b have different uids" "$([[ "$uid_a" != "$uid_b" ]] && echo different)" different
expect_eq "the shared volume's file has team-a's uid" "$(stat -c %u "$SHARED/from-pod.txt")" "$uid_a"
expect_eq "the API reports the pod's uid" "$(wl_field team-a/allowed '.pods[0].runAsUser')" "$uid_a"
expect_eq "the working folder is 0700" "$(stat -c %a "$DATA/work/team-a/allowed")" 700
expect_eq "the data directory is 0700" "$(stat -c %a "$DATA")" 700

# ---- GPUs: only the assigned device's node --------------------------------------------
out=$(run_pod gpu 1 'ls /dev | grep nvidia | sort | tr "\n" " "; echo; echo "visible=$CUDA_VISIBLE_DEVICES"')
uuid=$(wl_field team-a/gpu '.pods[0].devices')
minor=$("$G" gpus -o json | jq -r --arg u "$uuid" '.. | objects | select(.uuid? == $u) | .minor' | head -1)
expect_eq "the pod sees its GPU's node and nvidiactl only" "$(head -1 <<<"$out")" "nvidia$minor nvidiactl "
out=$(run_pod nogpu 0 'ls /dev | grep -c nvidia || true')
expect_eq "a pod without GPUs sees no nvidia node" "$out" 0
# on cgroup v1 the device controller allows the assigned node and denies the other
if [[ -d /sys/fs/cgroup/devices ]] && ! grep -qw devices /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null &&
   ! grep -qw devices /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  ajob gpuhold 1 'sleep 30' > "$TMP/gpuhold.yaml"
  "$G" submit -f "$TMP/gpuhold.yaml" >/dev/null
  wait_phase team-a/gpuhold Running 20 >/dev/null
  held=$(wl_field team-a/gpuhold '.pods[0].devices')
  hm=$("$G" gpus -o json | jq -r --arg u "$held" '.. | objects | select(.uuid? == $u) | .minor' | head -1)
  list=$(cat /sys/fs/cgroup/devices/"$CG_PARENT"/team-a/gpuhold/*/devices.list 2>/dev/null)
  expect_match "device cgroup allows the pod's GPU" "$list" "c 195:$hm rwm"
  expect_eq "device cgroup denies the other GPU" "$(grep -c "c 195:$((1 - hm)) " <<<"$list")" 0
  expect_eq "device cgroup allows nothing wholesale" "$(grep -c '^a ' <<<"$list")" 0
  "$G" cancel team-a/gpuhold >/dev/null
fi

# ---- hostPath rules at submit ---------------------------------------------------------
job sneaky team-a main 0 'true' "" "$(printf '      volumes:\n      - name: shared\n        hostPath: {path: %s}\n' "$TMP/denied")" |
  sed "s|mountPath: $SHARED|mountPath: /x|" > "$TMP/sneaky.yaml"
r=$(api POST /api/v1/workloads --data-binary @"$TMP/sneaky.yaml" -H 'Content-Type: application/yaml')
expect_eq "a host folder the namespace may not mount: 403" "$(status_of "$r")" 403
expect_match "and the error names the field" "$(body_of "$r")" 'volumes\[0\]\.hostPath\.path'
job sneaky2 team-b main 0 'true' "" "$(hostpath_volume)" > "$TMP/sneaky2.yaml"
r=$(api POST /api/v1/workloads --data-binary @"$TMP/sneaky2.yaml" -H 'Content-Type: application/yaml')
expect_eq "team-a's host folder is not team-b's: 403" "$(status_of "$r")" 403
ln -s /etc "$SHARED/link-to-etc"
job linked team-a main 0 'ls /x' "" "$(printf '      volumes:\n      - name: shared\n        hostPath: {path: %s}\n' "$SHARED/link-to-etc")" |
  sed "s|mountPath: $SHARED|mountPath: /x|" > "$TMP/linked.yaml"
"$G" submit -f "$TMP/linked.yaml" >/dev/null
check "a link out of an allowed folder fails the pod at start" wait_phase team-a/linked Failed 20
expect_match "naming where it leads" "$(wl_field team-a/linked .message)" "leads to /etc"
job nowd team-a main 0 'true' | sed 's|        image: busybox|        image: busybox\n        workingDir: /no/such/dir|' > "$TMP/nowd.yaml"
"$G" submit -f "$TMP/nowd.yaml" >/dev/null
check "a workingDir the pod cannot enter fails the Job" wait_phase team-a/nowd Failed 20
expect_match "saying which step failed" "$(wl_field team-a/nowd .message)" "cannot enter the working directory /no/such/dir"
job priv team-a main 0 'true' | sed 's|        image: busybox|        image: busybox\n        securityContext: {privileged: true}|' > "$TMP/priv.yaml"
r=$(api POST /api/v1/workloads --data-binary @"$TMP/priv.yaml" -H 'Content-Type: application/yaml')
expect_eq "a privileged container is refused: 422" "$(status_of "$r")" 422

# ---- resources: memory, processes ------------------------------------------------------
out=$(run_pod hog 0 'echo start; head -c 400000000 /dev/zero | tail >/dev/null || exit $?; echo survived' 64Mi)
expect_eq "the memory hog failed" "$(wl_field team-a/hog .phase)" Failed
expect_eq "its pod's reason is OOMKilled" "$(wl_field team-a/hog '.pods[0].reason')" OOMKilled
expect_eq "exit code 137, as Kubernetes reports it" "$(wl_field team-a/hog '.pods[0].exitCode')" 137
expect_match "the message says so, with the limit" "$(wl_field team-a/hog .message)" "OOMKilled \(memory limit 64Mi\)"
expect_match "gpuaas show prints OOMKilled" "$("$G" show team-a/hog)" "OOMKilled"
expect_eq "it never got past the limit" "$(grep -c survived <<<"$out")" 0
# the portal's workload page, signed in with the admin's token
login=$(curl -s -c "$TMP/jar" -b "$TMP/jar" "$GPUAAS_SERVER/login" | grep -o 'name="_login" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
curl -s -o /dev/null -c "$TMP/jar" -b "$TMP/jar" --data-urlencode "_login=$login" --data-urlencode "token=$ADMIN_TOKEN" "$GPUAAS_SERVER/login"
expect_match "the portal shows OOMKilled" "$(curl -s -b "$TMP/jar" "$GPUAAS_SERVER/ui/workloads/team-a/hog")" "<td>OOMKilled</td>"

# a failed fork ends the shell that tried it: the loop runs in a subshell, the pod goes on
ajob forker 0 '(for i in $(seq 1 200); do sleep 60 & done) 2>/dev/null; echo started; exec sleep 60' > "$TMP/forker.yaml"
"$G" submit -f "$TMP/forker.yaml" >/dev/null
wait_phase team-a/forker Running 20 >/dev/null
for _ in $(seq 1 50); do grep -q started "$DATA/logs/team-a/forker/pod-0.log" 2>/dev/null && break; sleep 0.2; done
pids_file=$(ls /sys/fs/cgroup/pids/"$CG_PARENT"/team-a/forker/*/pids.current /sys/fs/cgroup/"$CG_PARENT"/team-a/forker/*/pids.current 2>/dev/null | head -1)
cur=$(cat "$pids_file" 2>/dev/null || echo 0)
expect_eq "the fork loop is held at pidsLimit 64 (tried 200)" "$((cur >= 50 && cur <= 64))" 1

# ---- cancel: the whole cgroup ends, double-forked daemons included ----------------------
# a double-forked daemon in a new session that ignores SIGTERM: only the cgroup (and the
# PID namespace) can end it
ajob escaper 0 '(setsid sh -c "trap \"\" TERM; exec sleep 301" </dev/null >/dev/null 2>&1 &); echo forked; exec sleep 302' > "$TMP/escaper.yaml"
"$G" submit -f "$TMP/escaper.yaml" >/dev/null
wait_phase team-a/escaper Running 20 >/dev/null
for _ in $(seq 1 50); do pgrep -f 'sleep 301' >/dev/null && break; sleep 0.1; done
check "the double-forked sleeper runs" pgrep -f 'sleep 301'
"$G" cancel team-a/escaper >/dev/null
"$G" cancel team-a/forker >/dev/null
check "cancelled workloads end" wait_phase team-a/escaper Deactivated 20
check "the forker ends too" wait_phase team-a/forker Deactivated 20
expect_eq "no process of the double-forked pod is left" "$(pgrep -fc 'sleep 30[12]')" 0
expect_eq "no process of the fork loop is left" "$(pgrep -u "$uid_a" -c sleep)" 0
expect_eq "their cgroups are gone" "$(ls -d /sys/fs/cgroup/*/"$CG_PARENT"/team-a/escaper/* 2>/dev/null | wc -l)" 0

# ---- kill -9 of the daemon: pods re-adopted, limits still in force ----------------------
ajob survivor 0 'echo up; while [ ! -e '"$SHARED"'/go ]; do sleep 0.1; done; head -c 400000000 /dev/zero | tail >/dev/null || exit $?; echo survived' \
  64Mi > "$TMP/survivor.yaml"
"$G" submit -f "$TMP/survivor.yaml" >/dev/null
wait_phase team-a/survivor Running 20 >/dev/null
spid=$(wl_field team-a/survivor '.pods[0].pid')
crash_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "the sandboxed pod is re-adopted" "$(wl_field team-a/survivor '.pods[0].pid')/$(wl_field team-a/survivor .phase)" "$spid/Running"
touch "$SHARED/go"
check "its memory limit still holds after the restart" wait_phase team-a/survivor Failed 30
expect_eq "and the restarted daemon reports OOMKilled" "$(wl_field team-a/survivor '.pods[0].reason')" OOMKilled
"$G" cancel team-b/victim >/dev/null
check "the victim is cancelled" wait_phase team-b/victim Deactivated 20

# ---- a host that cannot sandbox: said at start, and every pod fails with the reason ----
stop_daemon
GPUAAS_BWRAP=/nonexistent/bwrap start_daemon "$cfg" || { fail "daemon start without bwrap"; finish; exit 1; }
expect_match "the banner says the sandbox is unavailable and why" "$(grep "sandbox:   UNAVAILABLE" "$TMP/serve.log" | tail -1)" \
  "UNAVAILABLE: bwrap not found: install the Debian package bubblewrap"
ajob nobox 0 'echo ran' > "$TMP/nobox.yaml"
"$G" submit -f "$TMP/nobox.yaml" >/dev/null
check "a pod cannot start unsandboxed" wait_phase team-a/nobox Failed 20
expect_match "and its Job says why" "$(wl_field team-a/nobox .message)" "sandbox is unavailable: bwrap not found"
expect_eq "its command never ran" "$(cat "$DATA/logs/team-a/nobox/pod-0.log" 2>/dev/null)" ""
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }

# ---- delete removes the working folder, never following a link the tenant left ---------
run_pod linker 0 'ln -s /etc/hostname ./link; echo made' >/dev/null
expect_eq "delete of a finished workload" "$(status_of "$(api DELETE /api/v1/workloads/team-a/linker)")" 200
check "delete removed the working folder" test ! -e "$DATA/work/team-a/linker"
check "and not what a link in it pointed to" test -s /etc/hostname
# ---- run.sandbox: none must be written, and is warned about ----------------------------
stop_daemon
sed -i 's/^run: {/run: {sandbox: none, /' "$cfg"
start_daemon "$cfg" || { fail "daemon start unsandboxed"; finish; exit 1; }
expect_match "run.sandbox: none is warned about at start" "$(grep 'sandbox:' "$TMP/serve.log" | tail -1)" \
  "NONE \(run.sandbox: none\): pods run as the daemon's uid 0 with no isolation"
finish
