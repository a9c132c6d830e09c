#!/usr/bin/env bash
# Utilisation reports end to end (issue 19, "Reports"; docs/operations.md, "Utilisation
# reports"): the daemon runs two short Jobs on simulated GPUs; the REST report, the CLI's
# table, JSON and CSV, and the portal's Reports page must all show the GPU time their pods
# held, to the millisecond (worked out here from the pods' own start and end times), and
# a user must see only their own namespaces.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN

cfg=$(write_config reports "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)
BOB=$(api POST /api/v1/users -d '{"name":"bob","namespaces":["team-b"]}' | sed '$d' | jq -r .token)

for n in r1 r2; do
  job "$n" team-a main 1 'sleep 1' >"$TMP/$n.yaml"
  expect_eq "submit $n" "$(status_of "$(api POST /api/v1/workloads --data-binary @"$TMP/$n.yaml")")" 201
done
for n in r1 r2; do check "$n succeeds" wait_phase "team-a/$n" Succeeded 30; done

# What the report must say: each pod's (finishedAt - startedAt) x its devices, summed.
want=$(for n in r1 r2; do wl_field "team-a/$n" '.pods'; done | jq -s 'add' | python3 -c '
import json, sys, datetime
def ms(t): return round(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000)
pods = json.load(sys.stdin)
print(sum((ms(p["finishedAt"]) - ms(p["startedAt"])) * len(p["devices"].split(",")) for p in pods if p["devices"]))')
expect_match "the pods held GPUs for a while" "$want" '^[0-9]{4,}$'

r=$(api GET '/api/v1/reports/utilization?since=1h')
expect_eq "GET report" "$(status_of "$r")" 200
b=$(body_of "$r")
expect_eq "one row: team-a on the H100s" "$(jq -c '[.rows[] | [.namespace, .class]]' <<<"$b")" '[["team-a","H100-80GB"]]'
expect_eq "allocated GPU-ms are the pods' device time" "$(jq '.rows[0].allocatedGpuMs' <<<"$b")" "$want"
expect_eq "the total agrees" "$(jq '.total.allocatedGpuMs' <<<"$b")" "$want"
expect_eq "hours with two decimals" "$(jq -r '.total.allocatedGpuHours' <<<"$b")" \
  "$(python3 -c "c = ($want + 18000) // 36000; print(f'{c // 100}.{c % 100:02d}')")"
expect_eq "both admissions counted" "$(jq '.rows[0].admitted' <<<"$b")" 2
busy=$(jq '.rows[0].busyGpuMs' <<<"$b")
check "busy is at most allocated" test "$busy" -le "$want"
expect_eq "nothing reclaimed or unused" "$(jq -c '[.total.idleReclaimedGpuMs, .total.noShowGpuMs]' <<<"$b")" '[0,0]'
expect_eq "by namespace" "$(api GET '/api/v1/reports/utilization?since=1h&by=namespace' | sed '$d' | jq -c '.rows | map(keys | index("class"))')" '[null]'

# who sees what
expect_eq "alice sees team-a" "$(TOKEN=$ALICE api GET '/api/v1/reports/utilization?since=1h' | sed '$d' | jq '.total.allocatedGpuMs')" "$want"
expect_eq "bob sees none of team-a's time" "$(TOKEN=$BOB api GET '/api/v1/reports/utilization?since=1h' | sed '$d' | jq -c '[.rows, .total.allocatedGpuMs]')" '[[],0]'
expect_eq "bob may not ask for team-a" "$(status_of "$(TOKEN=$BOB api GET '/api/v1/reports/utilization?namespace=team-a')")" 403
expect_eq "the admin may ask for team-b" "$(api GET '/api/v1/reports/utilization?namespace=team-b' | sed '$d' | jq -c .rows)" '[]'

# errors name the field
r=$(api GET '/api/v1/reports/utilization?since=yesterday')
expect_eq "a bad since is refused" "$(status_of "$r")" 400
expect_eq "... naming since" "$(body_of "$r" | jq -r .error.field)" since
expect_eq "a bad by names by" "$(api GET '/api/v1/reports/utilization?by=user' | sed '$d' | jq -r .error.field)" by
expect_eq "POST is not a method of it" "$(status_of "$(api POST /api/v1/reports/utilization)")" 405

# the CLI
out=$("$G" report --since 1h -o csv)
expect_eq "CSV header" "$(head -1 <<<"$out")" \
  "namespace,class,allocatedGpuMs,allocatedGpuHours,busyGpuMs,busyGpuHours,idleReclaimedGpuMs,idleReclaimedGpuHours,noShowGpuMs,noShowGpuHours,admitted,queueWaitP50Ms,queueWaitP90Ms"
expect_match "CSV row" "$(sed -n 2p <<<"$out")" "^team-a,H100-80GB,$want,"
expect_eq "JSON" "$("$G" report --since 1h -o json | jq '.total.allocatedGpuMs')" "$want"
tbl=$("$G" report --since 1h --by namespace)
expect_match "table header" "$(head -1 <<<"$tbl")" '^NAMESPACE +ALLOCATED-GPU-H +BUSY-GPU-H'
expect_match "table row and total" "$(sed -n 2,3p <<<"$tbl" | awk '{print $1}' | tr '\n' ' ')" '^team-a TOTAL $'
"$G" report -o yaml >/dev/null 2>"$TMP/err"
expect_eq "-o yaml is not one of report's formats" "$?" 2
"$G" report --since soon >/dev/null 2>"$TMP/err"
expect_match "a bad --since says why" "$(cat "$TMP/err")" 'since'

# the portal: the chart and the table
JAR=$TMP/alice.jar
expect_eq "alice signs in" "$(sign_in "$JAR" "$ALICE")" 303
page=$(curl -s -b "$JAR" "$GPUAAS_SERVER/ui/reports?since=1d")
expect_match "the chart" "$page" 'id="report-chart"'
hours=$(api GET '/api/v1/reports/utilization?since=1d&by=namespace' | sed '$d' | jq -r '.rows[0].allocatedGpuHours')
expect_match "a bar for team-a with its hours" "$page" "<g data-namespace=\"team-a\">.*data-hours=\"$hours\""
expect_match "the table row" "$page" '<tr data-namespace="team-a" data-class="H100-80GB">'
expect_match "the nav links it" "$page" 'href="/ui/reports" aria-current="page"'
JAR=$TMP/bob.jar
expect_eq "bob signs in" "$(sign_in "$JAR" "$BOB")" 303
page=$(curl -s -b "$JAR" "$GPUAAS_SERVER/ui/reports")
expect_match "bob's page has no team-a" "$page" 'No GPU was allocated in this window'
expect_eq "a bad window on the page" "$(curl -s -o /dev/null -w '%{http_code}' -b "$JAR" "$GPUAAS_SERVER/ui/reports?since=x")" 400
finish
