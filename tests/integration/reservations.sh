#!/usr/bin/env bash
# Bookings on the daemon (kind Reservation, gpuaas.dev/v1alpha1) through POST /api/v1/apply:
# a booking within team-a's nominal GPUs is applied; one that would overbook is refused
# (409) naming the conflicting booking and the free windows; an unknown time zone is
# refused naming the field; after a restart the stored booking still holds its capacity.
source "$(dirname "$0")/lib.sh"
cfg=$(write_config rsv "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

post() { local out; out=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$1");
         CODE=$(status_of "$out"); BODY=$(body_of "$out"); }
gpus=$(yq -r 'select(.kind == "ClusterQueue" and .metadata.name == "team-a") | .spec.resourceGroups[0].flavors[0].resources[] | select(.name == "nvidia.com/gpu") | .nominalQuota' \
       "$ROOT/examples/demo/queues.yaml" 2>/dev/null)
[[ -n "$gpus" ]] || gpus=$(awk '/name: team-a/{a=1} a && /nvidia.com\/gpu/{getline; print $2; exit}' "$ROOT/examples/demo/queues.yaml")
rsv() { # name quantity start end [extra]
cat > "$TMP/$1.yaml" <<Y
apiVersion: gpuaas.dev/v1alpha1
kind: Reservation
metadata: {name: $1, namespace: team-a}
spec:
  clusterQueue: team-a
  resources: [{flavor: h100, name: nvidia.com/gpu, quantity: $2}]
  start: "$3"
  end: "$4"
${5:-}
Y
}

rsv monday "$gpus" 2031-01-06T09:00:00+01:00 2031-01-06T17:00:00+01:00
post "$TMP/monday.yaml"
expect_eq "a booking of team-a's nominal GPUs is applied" "$CODE" 200
rsv clash 1 2031-01-06T16:00:00+01:00 2031-01-06T18:00:00+01:00
post "$TMP/clash.yaml"
expect_eq "an overlapping one would overbook: 409" "$CODE" 409
expect_eq "it names the resource" "$(jq -r .error.field <<<"$BODY")" "spec.resources[0]"
msg=$(jq -r .error.message <<<"$BODY")
expect_match "it names the conflict and its window" "$msg" "conflicts with team-a/monday \[2031-01-06T08:00:00.000Z, 2031-01-06T16:00:00.000Z\)"
expect_match "and the nearest free windows" "$msg" "free before: \[2031-01-06T06:00:00.000Z, 2031-01-06T08:00:00.000Z\); free after: \[2031-01-06T16:00:00.000Z, 2031-01-06T18:00:00.000Z\)"
rsv tz 1 2031-01-07T09:00:00+01:00 2031-01-07T10:00:00+01:00 "  recurrence: {weekly: [Tue], timeZone: Europe/Nowhere}"
post "$TMP/tz.yaml"
expect_eq "an unknown time zone is 422" "$CODE" 422
expect_eq "it names the field" "$(jq -r .error.field <<<"$BODY")" "spec.recurrence.timeZone"

stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
post "$TMP/clash.yaml"
expect_eq "after a restart the stored booking still holds its GPUs" "$CODE" 409
rsv later 1 2031-01-06T17:00:00+01:00 2031-01-06T18:00:00+01:00
post "$TMP/later.yaml"
expect_eq "the window after it is free" "$CODE" 200
finish
