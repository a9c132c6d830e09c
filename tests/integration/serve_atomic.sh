#!/usr/bin/env bash
# All or nothing, even when the store fails half-way: a multi-document submit is one
# SQLite transaction. Faults are injected into the real database with SQLite triggers
# (written while the daemon is stopped): the second document's insert fails, and so does
# any later delete of the first, as when a disk fills up or the daemon dies between them.
# Undoing by compensation (submit the first, then cancel and delete it) left the first
# workload recorded; one transaction leaves nothing, before and after a restart.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
queues cq 8 2 > "$TMP/queues.yaml"
cfg=$(write_config atomic "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
stop_daemon

python3 - "$TMP/data/gpuaas.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""
CREATE TRIGGER inject_insert BEFORE INSERT ON workloads WHEN NEW.name = 'second'
  BEGIN SELECT RAISE(ABORT, 'injected fault: disk full'); END;
CREATE TRIGGER inject_delete BEFORE DELETE ON workloads WHEN OLD.name = 'first'
  BEGIN SELECT RAISE(ABORT, 'injected fault: disk full'); END;
""")
db.commit()
PY

start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
{ job first lab q 1 'sleep 30'; echo '---'; job second lab q 1 'sleep 30'; } > "$TMP/two.yaml"
r=$(api POST /api/v1/workloads -H 'Content-Type: application/yaml' --data-binary @"$TMP/two.yaml")
expect_eq "the submission fails" "$(status_of "$r")" 500
expect_match "naming the store's error" "$(body_of "$r" | jq -r .error.message)" "injected fault"
expect_eq "and names the second document" "$(body_of "$r" | jq -r .error.document)" 1
expect_eq "no workload exists" "$(api GET /api/v1/workloads | sed '$d' | jq '.items | length')" 0
stop_daemon
start_daemon "$cfg" || { fail "daemon restart 2"; finish; exit 1; }
expect_eq "none after a restart either" "$(api GET /api/v1/workloads | sed '$d' | jq '.items | length')" 0
expect_eq "and none in the database" \
  "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from workloads").fetchone()[0])' "$TMP/data/gpuaas.db")" 0

# A pod starts only once its admission is recorded: the store refuses to record the
# admission of "held" (a trigger, added while the daemon runs), so it must not start; once
# the trigger is gone the record is retried and the Job runs. (Before: the failed commit
# was logged and the pod started anyway, a run the store did not know about.)
python3 - "$TMP/data/gpuaas.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.executescript("""
CREATE TRIGGER inject_admit BEFORE UPDATE ON workloads
  WHEN NEW.name = 'held' AND json_extract(NEW.status, '$.state') = 'Admitted'
  BEGIN SELECT RAISE(ABORT, 'injected fault: disk full'); END;
""")
db.commit()
PY
job held lab q 1 "echo ran > /dev/stdout; echo held-ran" > "$TMP/held.yaml"
"$G" submit -f "$TMP/held.yaml" >/dev/null
check "the workload says why it waits" until_ok 10 wl_says lab/held "waiting until the store records it"
expect_eq "no pod started while the admission is not recorded" "$(wl_field lab/held '.pods | length')" 0
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=10); c.execute("DROP TRIGGER inject_admit"); c.commit()' "$TMP/data/gpuaas.db"
check "once recorded it runs" wait_phase lab/held Succeeded 20
finish
