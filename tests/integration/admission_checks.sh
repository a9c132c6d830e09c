#!/usr/bin/env bash
# Kueue's admission checks and two-phase admission (docs/queueing.md): a workload of a
# ClusterQueue with checks reserves its quota (QuotaReserved) and runs only once every
# check is Ready. gpuaas runs the gpuaas.dev/approval controller: an admin approves
# (it runs) or rejects (Deactivated with the reason) from the CLI or REST; a non-admin
# gets 403. A check whose controller gpuaas does not run keeps its workloads waiting,
# saying so. A restart in between keeps every check state.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cat >"$TMP/ac-objects.yaml" <<'Y'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {gpu.model: h100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: approval}
spec: {controllerName: gpuaas.dev/approval}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec: {controllerName: example.com/provisioning}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gated}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: approval}]
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: ext}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: prov, onFlavors: [h100]}]
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gated, namespace: team-a}
spec: {clusterQueue: gated}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: ext, namespace: team-a}
spec: {clusterQueue: ext}
Y
cfg=$(write_config checks "$ROOT/examples/demo/node.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
out=$("$G" apply -f "$TMP/ac-objects.yaml" 2>&1); expect_eq "AdmissionChecks and queues with checks apply ($out)" "$?" 0
ac=$(api GET /api/v1/admissionchecks/approval | sed '$d')
expect_eq "the approval check is Active" "$(jq -r '.status.conditions[0].status' <<<"$ac")" True
ac=$(api GET /api/v1/admissionchecks/prov | sed '$d')
expect_eq "a check of a controller gpuaas does not run is not Active" "$(jq -r '.status.conditions[0].status' <<<"$ac")" False
ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)

# two-phase admission: quota reserved, not admitted, until an admin approves
job a team-a gated 1 'echo ran-a' >"$TMP/a.yaml"
job b team-a gated 1 'echo ran-b' >"$TMP/b.yaml"
"$G" submit -f "$TMP/a.yaml" >/dev/null
check "a reserves its quota and waits for approval" until_ok 10 wl_says team-a/a "admission check approval: waiting for an admin"
"$G" submit -f "$TMP/b.yaml" >/dev/null
expect_eq "a is Pending" "$(wl_field team-a/a .phase)" Pending
expect_eq "a holds quota (QuotaReserved)" "$(wl_field team-a/a '.conditions[] | select(.type=="QuotaReserved") | .status')" True
expect_eq "a is not Admitted" "$(wl_field team-a/a '.conditions[] | select(.type=="Admitted") | .reason')" UnsatisfiedChecks
expect_eq "its check is Pending" "$(wl_field team-a/a '.admissionChecks[0].state')" Pending
until_ok 10 wl_says team-a/b "."
expect_match "b waits for the quota a holds" "$(wl_field team-a/b .message)" "queue gated uses 1 of 1"
expect_match "show explains the wait" "$("$G" show team-a/a)" "waiting for an admin to approve"
r=$(TOKEN=$ALICE api POST /api/v1/workloads/team-a/a/approve -d '{}')
expect_eq "a non-admin cannot approve" "$(status_of "$r")" 403
r=$(api POST /api/v1/workloads/team-a/a/reject -d '{}')
expect_eq "a rejection needs a message" "$(status_of "$r")" 422
expect_match "  naming the field" "$(body_of "$r")" "message"

# a restart keeps the reservation and the check state
stop_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
expect_eq "after a restart a still holds its quota" "$(wl_field team-a/a '.conditions[] | select(.type=="QuotaReserved") | .status')" True
expect_eq "  and its check is still Pending" "$(wl_field team-a/a '.admissionChecks[0].state')" Pending
expect_eq "  and it has not started" "$(wl_field team-a/a .phase)" Pending

# the portal: an admin's page of a waiting workload offers the verdict
expect_eq "the admin signs in on the portal" "$(sign_in "$TMP/admin.jar" "$ADMIN_TOKEN")" 303
check "the workload's page offers Approve and Reject" bash -c \
  "curl -s -b '$TMP/admin.jar' '$GPUAAS_SERVER/ui/workloads/team-a/a' | grep -q 'value=\"approve\">Approve</button>.*value=\"reject\"'"
check "gpuaas approve" "$G" approve team-a/a --message "looks fine"
check "approved workload runs to the end" wait_phase team-a/a Succeeded 15
expect_eq "its check is Ready" "$(wl_field team-a/a '.admissionChecks[0].state')" Ready
expect_match "  with the admin's words" "$(wl_field team-a/a '.admissionChecks[0].message')" "approved by admin: looks fine"

# b gets the freed quota; the admin rejects it
check "b waits for approval" until_ok 10 wl_says team-a/b "waiting for an admin"
"$G" reject team-a/b >/dev/null 2>&1
expect_eq "gpuaas reject without --message is a usage error" "$?" 2
check "gpuaas reject" "$G" reject team-a/b --message "no budget left this month"
expect_eq "rejected workload is Deactivated" "$(wl_field team-a/b .phase)" Deactivated
expect_match "  with the reason" "$(wl_field team-a/b '.conditions[] | select(.type=="Evicted") | .message')" "no budget left this month"
expect_eq "  its check is Rejected" "$(wl_field team-a/b '.admissionChecks[0].state')" Rejected
expect_eq "  and it never ran" "$(wl_field team-a/b '.pods | length')" 0

# a check of a controller gpuaas does not run: waits, saying so, until it is set Ready
job c team-a ext 1 'echo ran-c' >"$TMP/c.yaml"
"$G" submit -f "$TMP/c.yaml" >/dev/null
check "c waits for a controller gpuaas does not run" until_ok 10 wl_says team-a/c \
  "admission check prov: controller example.com/provisioning is not run by gpuaas; the workload waits until the check is set Ready"
r=$(api POST /api/v1/workloads/team-a/c/approve -d '{}')
expect_eq "approve without --check finds no approval check" "$(status_of "$r")" 409
crash_daemon
start_daemon "$cfg" || { fail "daemon restart 2"; finish; exit 1; }
expect_eq "after kill -9 the rejection is kept" "$(wl_field team-a/b '.admissionChecks[0].state')" Rejected
check "  and c still waits" wl_says team-a/c "not run by gpuaas"
check "setting the check Ready by name" "$G" approve team-a/c --check prov
check "c runs" wait_phase team-a/c Succeeded 15
expect_match "gpuaas get ac lists the checks with their controllers" "$("$G" get ac)" 'approval +gpuaas.dev/approval'

# the portal's verdict: d waits for approval, the admin approves it on its page
job d team-a gated 1 'echo ran-d' >"$TMP/d.yaml"
"$G" submit -f "$TMP/d.yaml" >/dev/null
check "d waits for approval" until_ok 10 wl_says team-a/d "waiting for an admin"
sign_in "$TMP/admin.jar" "$ADMIN_TOKEN" >/dev/null
csrf=$(csrf_of_jar "$TMP/admin.jar")
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/admin.jar" --data-urlencode "_csrf=$csrf" \
  --data-urlencode verdict=approve --data-urlencode "message=fine by me" "$GPUAAS_SERVER/ui/workloads/team-a/d/verdict")
expect_eq "the portal's Approve answers with the workload's page (303)" "$code" 303
check "d runs" wait_phase team-a/d Succeeded 15
expect_match "  approved with the admin's words" "$(wl_field team-a/d '.admissionChecks[0].message')" "fine by me"
finish
