#!/usr/bin/env bash
# Bookings over REST and the CLI (POST/GET/DELETE /api/v1/reservations, gpuaas reserve,
# reservations, unreserve): a user books for their namespace and sees it; another user
# sees the window but not the names; booking for another namespace is 403; one over
# capacity is 409 with its conflicts and free windows, and the free window is accepted;
# a weekly booking in Europe/Paris keeps its local hours across the 2026-10-25 change;
# the config's booking limits refuse naming the limit; a no-show lands in the utilisation
# report's noShowGpuHours.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
{ queues lab-cq 8 2
  cat <<'YAML'
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: other}
spec: {clusterQueue: lab-cq}
YAML
} > "$TMP/queues.yaml"
cfg=$(write_config rsvapi "$ROOT/examples/demo/node.yaml" "$TMP/queues.yaml")
printf 'reservations:\n  limits:\n    lab: {gpuHoursPerWeek: 10}\n' >> "$cfg"
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["lab"]}' | sed '$d' | jq -r .token)
BOB=$(api POST /api/v1/users -d '{"name":"bob","namespaces":["other"]}' | sed '$d' | jq -r .token)

doc() {   # doc NAME NS QTY START END [EXTRA-SPEC-JSON]
  printf '{"apiVersion":"gpuaas.dev/v1alpha1","kind":"Reservation","metadata":{"name":"%s","namespace":"%s"},"spec":{"clusterQueue":"lab-cq","resources":[{"flavor":"h100","name":"nvidia.com/gpu","quantity":%s}],"start":"%s","end":"%s"%s}}' \
    "$1" "$2" "$3" "$4" "$5" "${6:+,$6}"
}
post() { local out; out=$(TOKEN=$1 api POST /api/v1/reservations -d "$2"); CODE=$(status_of "$out"); BODY=$(body_of "$out"); }
W='from=2031-01-06T00:00:00Z&to=2031-01-07T00:00:00Z'

post "$ALICE" "$(doc monday lab 2 2031-01-06T09:00:00+01:00 2031-01-06T12:00:00+01:00)"
expect_eq "alice books for lab: 201" "$CODE" 201
expect_eq "the answer is the booking, its start kept as written" "$(jq -r .start <<<"$BODY")" "2031-01-06T09:00:00+01:00"
r=$(TOKEN=$ALICE api GET "/api/v1/reservations?$W" | sed '$d')
expect_eq "alice sees it, named, its window in UTC" \
  "$(jq -r '.items[0] | "\(.namespace)/\(.name) \(.occurrences[0].start) \(.occurrences[0].phase)"' <<<"$r")" \
  "lab/monday 2031-01-06T08:00:00.000Z Upcoming"
expect_eq "with the capacity it books against" "$(jq -r '.capacity[] | select(.resource == "nvidia.com/gpu") | "\(.clusterQueue) \(.nominal)"' <<<"$r")" "lab-cq 2"
r=$(TOKEN=$BOB api GET "/api/v1/reservations?$W" | sed '$d')
expect_eq "bob sees the window and quantity but no names" \
  "$(jq -r '.items[0] | "\(.namespace) \(.name) \(.resources[0].quantity) \(.occurrences[0].end)"' <<<"$r")" \
  "null null 2 2031-01-06T11:00:00.000Z"
expect_eq "bob cannot read it by name: 404" "$(status_of "$(TOKEN=$BOB api GET /api/v1/reservations/lab/monday)")" 404
expect_eq "alice can: 200" "$(status_of "$(TOKEN=$ALICE api GET /api/v1/reservations/lab/monday)")" 200
post "$BOB" "$(doc theirs lab 1 2031-01-08T09:00:00Z 2031-01-08T10:00:00Z)"
expect_eq "bob cannot book for lab: 403" "$CODE" 403
expect_eq "naming the namespace" "$(jq -r .error.field <<<"$BODY")" "metadata.namespace"
expect_eq "bob cannot cancel lab's booking: 403" "$(status_of "$(TOKEN=$BOB api DELETE /api/v1/reservations/lab/monday)")" 403

post "$BOB" "$(doc clash other 1 2031-01-06T10:00:00Z 2031-01-06T12:00:00Z)"
expect_eq "an overlapping booking over capacity: 409" "$CODE" 409
expect_eq "it lists the conflict, without another namespace's names" \
  "$(jq -r '.conflicts[0] | "\(.namespace)/\(.name) \(.start)"' <<<"$BODY")" "null/null 2031-01-06T08:00:00.000Z"
expect_eq "nor in the message" "$(jq -r '.error.message | test("monday|lab/")' <<<"$BODY")" false
expect_eq "and the free windows" "$(jq -r '[.alternatives[] | .start + "/" + .end] | join(" ")' <<<"$BODY")" \
  "2031-01-06T06:00:00.000Z/2031-01-06T08:00:00.000Z 2031-01-06T11:00:00.000Z/2031-01-06T13:00:00.000Z"
alt=$(jq -r '.alternatives[-1] | .start + " " + .end' <<<"$BODY")
post "$BOB" "$(doc clash other 1 ${alt% *} ${alt#* })"
expect_eq "the free window, submitted, is accepted" "$CODE" 201

# 09:00-10:00 Paris on Saturdays and Mondays: 07:00Z in summer time (UTC+2) on Saturday
# 2026-10-24, 08:00Z in winter time (UTC+1) on Monday 2026-10-26, after the change
post "$ALICE" "$(doc weekly lab 1 2026-10-24T09:00:00+02:00 2026-10-24T10:00:00+02:00 '"recurrence":{"weekly":["Sat","Mon"],"timeZone":"Europe/Paris"}')"
expect_eq "a weekly booking in Europe/Paris: 201" "$CODE" 201
r=$(TOKEN=$ALICE api GET "/api/v1/reservations?namespace=lab&from=2026-10-20T00:00:00Z&to=2026-10-28T00:00:00Z" | sed '$d')
expect_eq "its local hours hold across the DST change" \
  "$(jq -r '.items[] | select(.name == "weekly") | [.occurrences[].start] | join(" ")' <<<"$r")" \
  "2026-10-24T07:00:00.000Z 2026-10-26T08:00:00.000Z"
post "$ALICE" "$(doc badtz lab 1 2031-01-07T09:00:00Z 2031-01-07T10:00:00Z '"recurrence":{"weekly":["Tue"],"timeZone":"Europe/Nowhere"}')"
expect_eq "an unknown zone is 422 naming the field" "$CODE $(jq -r .error.field <<<"$BODY")" "422 spec.recurrence.timeZone"

post "$ALICE" "$(doc long lab 1 2031-01-13T00:00:00Z 2031-01-13T11:00:00Z)"
expect_eq "11 GPU-hours in a week over lab's limit of 10: 422" "$CODE" 422
expect_match "naming the limit" "$(jq -r .error.message <<<"$BODY")" "gpuHoursPerWeek"

# the CLI
out=$(GPUAAS_TOKEN=$ALICE "$G" reserve cli1 -n lab --cluster-queue lab-cq --flavor h100 --gpus 1 \
        --start 2031-01-06T12:00:00Z --end 2031-01-06T13:00:00Z)
expect_match "gpuaas reserve books" "$out" "reservation lab/cli1 booked"
out=$(GPUAAS_TOKEN=$ALICE "$G" reserve cli2 -n lab --cluster-queue lab-cq --flavor h100 --gpus 2 \
        --start 2031-01-06T08:30:00Z --end 2031-01-06T09:30:00Z 2>&1); rc=$?
expect_eq "a conflict exits 1" "$rc" 1
expect_match "printing the conflicts and the free windows" "$out" "conflicts with lab/monday.*free: --start"
out=$(GPUAAS_TOKEN=$ALICE "$G" reservations -n lab --from 2031-01-06T00:00:00Z --to 2031-01-07T00:00:00Z)
expect_match "gpuaas reservations shows the table" "$out" "NAMESPACE +NAME +QUEUE +GPUS +NEXT-START +NEXT-END +PHASE"
expect_match "with the booking" "$out" "lab +cli1 +lab-cq +1 +2031-01-06T12:00:00.000Z"
expect_eq "-o json is the API's answer" \
  "$(GPUAAS_TOKEN=$ALICE "$G" reservations -n lab --from 2031-01-06T00:00:00Z --to 2031-01-07T00:00:00Z -o json | jq -r '[.items[].name] | sort | join(" ")')" \
  "cli1 monday weekly"
expect_match "gpuaas unreserve cancels" "$(GPUAAS_TOKEN=$ALICE "$G" unreserve lab/cli1)" "reservation lab/cli1 cancelled"
expect_eq "it is gone" "$(status_of "$(TOKEN=$ALICE api GET /api/v1/reservations/lab/cli1)")" 404

# a no-show: starts in 2 s, 60 s long, released 2 s after its start with nothing running
now=$(date +%s)
s=$(date -u -d "@$((now + 2))" +%Y-%m-%dT%H:%M:%SZ) e=$(date -u -d "@$((now + 62))" +%Y-%m-%dT%H:%M:%SZ)
post "$ALICE" "$(doc noshow lab 1 "$s" "$e" '"noShowTimeout":"2s"')"
expect_eq "a short booking with a no-show timeout: 201" "$CODE" 201
released() { TOKEN=$ALICE api GET /api/v1/reservations/lab/noshow | sed '$d' | jq -e '.occurrences[0].phase == "Released"'; }
check "it is released after its noShowTimeout" until_ok 15 released
rep=$(api GET '/api/v1/reports/utilization?since=1d&by=namespace' | sed '$d')
expect_match "the report counts the booked hours unused (1 GPU x about 56 s)" \
  "$(jq -r '[.. | objects | select(.namespace? == "lab") | .noShowGpuHours] | first' <<<"$rep")" '^0\.0[12]$'
finish
