#!/usr/bin/env bash
# The authorisation matrix (issue 16): every route of the daemon (REST API, probes, the
# OpenAI-compatible gateway, the portal's pages and form actions) against every kind of
# caller, one table below, one expected answer per cell. Then three checks that keep the
# table whole:
#  - every route word the code dispatches on (the patterns in route_words below, read
#    from the sources) must appear in a row's path: a new route fails this test until it
#    gets a row;
#  - every method a row does not list for its path is refused (404/405) even to an admin:
#    a new method on an old path fails too;
#  - the table's own principals and cells are well formed.
# And what the issue names besides: /api/v1/models and /v1/models list only the models
# whose tiers the caller may use; /metrics shows no user name to a caller without an
# admin token.
source "$(dirname "$0")/lib.sh"

cfg=$(write_config authz-matrix "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml" \
        "$ROOT/examples/templates/batch-training.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
start_fake up --tokens 4 --token-ms 1 || { fail "fake model server start"; finish; exit 1; }
UP=$(cat "$TMP/up.port")
S=$GPUAAS_SERVER
N=0   # a counter for fresh names
# fresh VAR PREFIX: VAR=PREFIX-N, a name not used before (not in a subshell: N must count)
fresh() { N=$((N + 1)); printf -v "$1" '%s-%s' "$2" "$N"; }

# ---- the principals --------------------------------------------------------------------
ADMIN=$ADMIN_TOKEN
ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)
BOB=$(api POST /api/v1/users -d '{"name":"bob","namespaces":["team-b"]}' | sed '$d' | jq -r .token)
cat >"$TMP/gw.yaml" <<Y
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 1000}, namespaces: [team-a, team-b]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: restricted}
spec: {limits: {requestsPerMinute: 1000}, namespaces: [team-b]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: open-model}
spec: {servedNames: [open-llm], tiers: [open, restricted], url: "http://127.0.0.1:$UP/v1"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: secret-model}
spec: {servedNames: [secret-llm], tiers: [restricted], url: "http://127.0.0.1:$UP/v1"}
Y
expect_eq "tiers and models applied" "$(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/gw.yaml")")" 200
k=$(TOKEN=$ALICE api POST /api/v1/keys -d '{"name":"matrix","tier":"open"}')
GWKEY=$(body_of "$k" | jq -r .key)
expect_match "alice has a gateway key" "$GWKEY" '^gpa_'
new_sessions() {   # alice's and the admin's portal sessions (the admin's serves nocsrf too)
  local n
  fresh n s; SJAR=$TMP/alice-$n.jar AJAR=$TMP/admin-$n.jar
  expect_eq "alice signs in on the portal" "$(sign_in "$SJAR" "$ALICE")" 303
  expect_eq "the admin signs in on the portal" "$(sign_in "$AJAR" "$ADMIN")" 303
  SCSRF=$(csrf_of_jar "$SJAR") ACSRF=$(csrf_of_jar "$AJAR")
  [[ -n "$SCSRF" && -n "$ACSRF" ]] || fail "no CSRF token on the portal's page"
}
new_sessions

# The columns. sess: alice (team-a) signed in on the portal, sending the CSRF token (the
# X-CSRF-Token header to the API, the _csrf field in forms); nocsrf: the admin signed in
# on the portal, without it (the strongest case: everything else would let them);
# asess: the admin signed in, with it.
PRINCIPALS=(anon alice bob admin gwkey sess nocsrf asess)

# ---- fixtures: setups run as the admin before each cell of their row -------------------
submit_a() {   # submit_a NAME [GPUS SCRIPT]: a job in team-a (4 GPUs: pending for good, no processes)
  local r
  job "$1" team-a main "${2:-4}" "${3:-true}" >"$TMP/job.yaml"
  r=$(TOKEN=$ADMIN api POST /api/v1/workloads --data-binary @"$TMP/job.yaml")
  [[ "$(status_of "$r")" == 201 ]] || fail "fixture: submit $1: $r"
}
apply_admin() {   # apply_admin YAML
  local r
  r=$(TOKEN=$ADMIN api POST /api/v1/apply --data-binary "$1")
  [[ "$(status_of "$r")" == 200 ]] || fail "fixture: apply: $r"
}
kueue() { printf 'apiVersion: kueue.x-k8s.io/v1beta2\nkind: %s\nmetadata: {name: %s%s}\n%s\n' "$1" "$2" "${4:+, namespace: $4}" "$3"; }
gpuaas_obj() { printf 'apiVersion: gpuaas.dev/v1alpha1\nkind: %s\nmetadata: {name: %s}\n%s\n' "$1" "$2" "$3"; }
declare -A V DEF=([wl]=wa-0 [cq]=team-a [lq]=main [rf]=h100 [co]=lab [pc]=pc-0 [node]=demo-node [gpu]=GPU-5d1e0a7c-0000-4000-8000-000000000000
              [ac]=approval [user]=bob [key]=x [model]=open-model [tier]=open [tpl]=batch-training [asset]=portal.js [rsv]=none)
submit_a wa-0 0 'echo hello; sleep 600'
apply_admin "$(kueue WorkloadPriorityClass pc-0 'value: 5')"
# admission checks: a queue whose workloads wait for an admin's approval (approve/reject rows)
apply_admin "$(kueue AdmissionCheck approval 'spec: {controllerName: gpuaas.dev/approval}')"
apply_admin "$(kueue ClusterQueue checked 'spec: {namespaceSelector: {}, admissionChecksStrategy: {admissionChecks: [{name: approval}]}, resourceGroups: [{coveredResources: [cpu, nvidia.com/gpu], flavors: [{name: h100, resources: [{name: cpu, nominalQuota: "100"}, {name: nvidia.com/gpu, nominalQuota: "0"}]}]}]}')"
apply_admin "$(kueue LocalQueue checked 'spec: {clusterQueue: checked}' team-a)"
BODY="" FORM=()
set_wl()    { fresh n wl; V[wl]=$n; submit_a "${V[wl]}"; }
set_wl_off(){ set_wl; TOKEN=$ADMIN api POST "/api/v1/workloads/team-a/${V[wl]}/cancel" >/dev/null; }   # deletable
set_wl_chk(){   # a workload holding its quota, waiting for approval; BODY the verdict
  fresh n wl; V[wl]=$n; BODY='{"message":"matrix"}'
  job "$n" team-a checked 0 true >"$TMP/job.yaml"
  TOKEN=$ADMIN api POST /api/v1/workloads --data-binary @"$TMP/job.yaml" >/dev/null
  until_ok 10 wl_says "team-a/$n" "waiting for an admin" || fail "fixture: $n does not wait for approval"
}
set_ac()    { fresh n ac; V[ac]=$n; apply_admin "$(kueue AdmissionCheck "${V[ac]}" 'spec: {controllerName: example.com/x}')"; }
set_user()  { fresh n user; V[user]=$n; api POST /api/v1/users -d "{\"name\":\"${V[user]}\",\"namespaces\":[\"team-c\"]}" >/dev/null; }
set_key()   { fresh n k; V[key]=$(TOKEN=$ALICE api POST /api/v1/keys -d "{\"name\":\"$n\",\"tier\":\"open\"}" | sed '$d' | jq -r .id); }
set_rf()    { fresh n rf; V[rf]=$n; apply_admin "$(kueue ResourceFlavor "${V[rf]}" '')"; }
set_co()    { fresh n co; V[co]=$n; apply_admin "$(kueue Cohort "${V[co]}" '')"; }
set_pc()    { fresh n pc; V[pc]=$n; apply_admin "$(kueue WorkloadPriorityClass "${V[pc]}" 'value: 7')"; }
set_cq()    { fresh n cq; V[cq]=$n; apply_admin "$(kueue ClusterQueue "${V[cq]}" 'spec: {namespaceSelector: {}, resourceGroups: []}')"; }
set_lq()    { fresh n lq; V[lq]=$n; apply_admin "$(kueue LocalQueue "${V[lq]}" 'spec: {clusterQueue: team-a}' team-a)"; }
set_node()  { fresh n node; V[node]=$n; apply_admin "$(gpuaas_obj Node "${V[node]}" 'spec: {cpu: "1", memory: 1Gi, gpus: []}')"; }
set_tier()  { fresh n tier; V[tier]=$n; apply_admin "$(gpuaas_obj Tier "${V[tier]}" 'spec: {limits: {requestsPerMinute: 5}}')"; }
set_model() { fresh n model; V[model]=$n; apply_admin "$(gpuaas_obj Model "${V[model]}" "spec: {servedNames: [${V[model]}], tiers: [open], url: \"http://127.0.0.1:$UP/v1\"}")"; }
rsv_doc()   { printf '{"kind":"Reservation","metadata":{"name":"%s","namespace":"team-a"},"spec":{"clusterQueue":"team-a","resources":[{"flavor":"h100","name":"nvidia.com/gpu","quantity":1}],"start":"2031-02-%02dT09:00:00Z","end":"2031-02-%02dT10:00:00Z"}}' "$1" $((N % 28 + 1)) $((N % 28 + 1)); }
set_rsv()   { fresh n rsv; V[rsv]=$n; local r; r=$(TOKEN=$ADMIN api POST /api/v1/reservations -d "$(rsv_doc "$n")")
              [[ "$(status_of "$r")" == 201 ]] || fail "fixture: reserve $n: $r"; }
b_rsv()     { fresh n rsv; BODY=$(rsv_doc "$n"); }
b_job()     { fresh n sub; job "$n" team-a main 0 'true' >"$TMP/sub.yaml"; BODY=@$TMP/sub.yaml; }
b_apply()   { BODY=$(kueue Cohort lab ''); }
b_user()    { fresh n nu; BODY="{\"name\":\"$n\",\"namespaces\":[\"team-c\"]}"; }
b_key()     { fresh n k; BODY="{\"name\":\"$n\",\"tier\":\"open\"}"; }
b_mig()     { BODY='{}'; }
b_chat()    { BODY='{"model":"open-llm","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'; }
b_compl()   { BODY='{"model":"open-llm","prompt":"hi","max_tokens":2}'; }
b_embed()   { BODY='{"model":"open-llm","input":"hi"}'; }
f_login()   { FORM=(token=gpt_000000000000_nope); }
f_new()     { FORM=(action=submit namespace=team-a queue=main gpus=1 steps=1 hours=1 priority=low); }
f_quota()   { FORM=(quota=1 flavor=h100 resource=nvidia.com/gpu); }
f_account() { FORM=(password=aaaaaaaa1 password2=bbbbbbbb2); }
f_apply()   { FORM=("yaml=$(kueue Cohort lab '')"); }
f_create()  { fresh n pu; FORM=("user=$n" namespaces=team-c); }
f_update()  { set_user; FORM=("user=${V[user]}" namespaces=team-c); }
f_password(){ set_user; FORM=("user=${V[user]}" password=a-long-password-9); }
f_delete()  { set_user; FORM=("user=${V[user]}"); }
f_none()    { FORM=(); }
s_wl_cancel() { set_wl; FORM=(); }
s_wl_verdict() { set_wl_chk; FORM=(verdict=approve message=matrix); }
s_logout()  { new_sessions; FORM=(); }
# an interactive session (session_echo.py on a port of its own, issue 17) running in
# team-a, started for the first row that needs it: /ui/sessions/team-a/sx/ relays to it
s_session() {
  FORM=()
  [[ -n "${SESSION_UP:-}" ]] && return 0
  local port=$((20000 + RANDOM % 20000))
  job sx team-a main 0 "python3 - $port <<'PYEOF'
$(<"$ROOT/tests/integration/session_echo.py")
PYEOF" | sed "s|^  labels:|  annotations: {gpuaas.dev/session-port: \"$port\"}\n  labels:|" >"$TMP/sx.yaml"
  TOKEN=$ADMIN api POST /api/v1/workloads -H 'Content-Type: application/yaml' --data-binary @"$TMP/sx.yaml" >/dev/null
  up() { [[ $(curl -s -o /dev/null -w '%{http_code}' -b "$SJAR" "$S/ui/sessions/team-a/sx/") == 200 ]]; }
  until_ok 30 up || fail "the matrix's session never answered through the portal"
  SESSION_UP=1
}
secret()    { V[model]=secret-model V[tier]=restricted; }

# ---- the table ---------------------------------------------------------------------------
# One row per (method, path). A cell is the answer expected for that caller:
#   2  any 2xx (allowed)      R  a redirect (303) anywhere but the sign-in page (allowed)
#   L  a redirect to /login (the portal's "sign in first": denied)
#   NNN that status exactly: 401 and 403 deny; 404 denies where the object is someone
#       else's and its existence is not told (keys), or allows where the object is missing;
#       400/422 allow (the caller may, the body is wrong).
# {x} in a path is V[x]: a fixture of the row's setup (run before each cell) or a default.
# Deny cells are the ones the principal may not pass; allow cells prove the row's route is
# reachable at all (a deny-only row would pass on a route that no longer exists).
TABLE=$(cat <<'T'
# method path                                  anon alice bob admin gwkey sess nocsrf asess setup
GET    /healthz                                2    2     2   2     2     2    2      2     -
GET    /health                                 2    2     2   2     2     2    2      2     -
GET    /readyz                                 2    2     2   2     2     2    2      2     -
GET    /metrics                                2    2     2   2     2     2    2      2     -
GET    /api/v1/whoami                          401  2     2   2     401   2    401    2     -
POST   /api/v1/apply                           401  403   403 2     401   403  401    2     b_apply
GET    /api/v1/workloads                       401  2     2   2     401   2    401    2     -
POST   /api/v1/workloads                       401  2     403 2     401   2    401    2     b_job
GET    /api/v1/workloads/team-a/{wl}           401  2     403 2     401   2    401    2     -
DELETE /api/v1/workloads/team-a/{wl}           401  2     403 2     401   2    401    2     set_wl_off
POST   /api/v1/workloads/team-a/{wl}/cancel    401  2     403 2     401   2    401    2     set_wl
GET    /api/v1/workloads/team-a/{wl}/logs      401  2     403 2     401   2    401    2     -
POST   /api/v1/workloads/team-a/{wl}/approve   401  403   403 2     401   403  401    2     set_wl_chk
POST   /api/v1/workloads/team-a/{wl}/reject    401  403   403 2     401   403  401    2     set_wl_chk
GET    /api/v1/admissionchecks                 401  2     2   2     401   2    401    2     -
GET    /api/v1/admissionchecks/{ac}            401  2     2   2     401   2    401    2     -
DELETE /api/v1/admissionchecks/{ac}            401  403   403 2     401   403  401    2     set_ac
GET    /api/v1/clusterqueues                   401  2     2   2     401   2    401    2     -
GET    /api/v1/clusterqueues/{cq}              401  2     2   2     401   2    401    2     -
DELETE /api/v1/clusterqueues/{cq}              401  403   403 2     401   403  401    2     set_cq
GET    /api/v1/localqueues                     401  2     2   2     401   2    401    2     -
GET    /api/v1/localqueues/team-a/{lq}         401  2     403 2     401   2    401    2     -
DELETE /api/v1/localqueues/team-a/{lq}         401  403   403 2     401   403  401    2     set_lq
GET    /api/v1/resourceflavors                 401  2     2   2     401   2    401    2     -
GET    /api/v1/resourceflavors/{rf}            401  2     2   2     401   2    401    2     -
DELETE /api/v1/resourceflavors/{rf}            401  403   403 2     401   403  401    2     set_rf
GET    /api/v1/cohorts                         401  2     2   2     401   2    401    2     -
GET    /api/v1/cohorts/{co}                    401  2     2   2     401   2    401    2     -
DELETE /api/v1/cohorts/{co}                    401  403   403 2     401   403  401    2     set_co
GET    /api/v1/workloadpriorityclasses         401  2     2   2     401   2    401    2     -
GET    /api/v1/workloadpriorityclasses/{pc}    401  2     2   2     401   2    401    2     -
DELETE /api/v1/workloadpriorityclasses/{pc}    401  403   403 2     401   403  401    2     set_pc
GET    /api/v1/nodes                           401  2     2   2     401   2    401    2     -
GET    /api/v1/nodes/{node}                    401  2     2   2     401   2    401    2     -
DELETE /api/v1/nodes/{node}                    401  403   403 2     401   403  401    2     set_node
GET    /api/v1/templates                       401  2     2   2     401   2    401    2     -
GET    /api/v1/clusters                        401  2     2   2     401   2    401    2     -
GET    /api/v1/gpus                            401  2     2   2     401   2    401    2     -
GET    /api/v1/reports/utilization             401  2     2   2     401   2    401    2     -
GET    /api/v1/reservations                    401  2     2   2     401   2    401    2     -
POST   /api/v1/reservations                    401  2     403 2     401   2    401    2     b_rsv
GET    /api/v1/reservations/team-a/{rsv}       401  2     404 2     401   2    401    2     set_rsv
DELETE /api/v1/reservations/team-a/{rsv}       401  2     403 2     401   2    401    2     set_rsv
GET    /api/v1/gpus/{gpu}/utilization          401  2     2   2     401   2    401    2     -
POST   /api/v1/gpus/mig                        401  403   403 400   401   403  401    400   b_mig
GET    /api/v1/users                           401  403   403 2     401   403  401    2     -
POST   /api/v1/users                           401  403   403 2     401   403  401    2     b_user
DELETE /api/v1/users/{user}                    401  403   403 2     401   403  401    2     set_user
GET    /api/v1/keys                            401  2     2   2     401   2    401    2     -
POST   /api/v1/keys                            401  2     2   2     401   2    401    2     b_key
GET    /api/v1/keys/{key}                      401  2     404 2     401   2    401    2     set_key
DELETE /api/v1/keys/{key}                      401  2     404 2     401   2    401    2     set_key
GET    /api/v1/models                          401  2     2   2     401   2    401    2     -
GET    /api/v1/models/{model}                  401  2     2   2     401   2    401    2     -
GET    /api/v1/models/{model}                  401  404   2   2     401   404  401    2     secret
DELETE /api/v1/models/{model}                  401  403   403 2     401   403  401    2     set_model
GET    /api/v1/tiers                           401  2     2   2     401   2    401    2     -
GET    /api/v1/tiers/{tier}                    401  2     2   2     401   2    401    2     -
GET    /api/v1/tiers/{tier}                    401  404   2   2     401   404  401    2     secret
DELETE /api/v1/tiers/{tier}                    401  403   403 2     401   403  401    2     set_tier
GET    /api/v1/usage                           401  2     2   2     401   2    401    2     -
GET    /v1/models                              401  401   401 401   2     401  401    401   -
POST   /v1/chat/completions                    401  401   401 401   2     401  401    401   b_chat
POST   /v1/completions                         401  401   401 401   2     401  401    401   b_compl
POST   /v1/embeddings                          401  401   401 401   2     401  401    401   b_embed
GET    /                                       L    L     L   L     L     2    2      2     -
GET    /login                                  2    2     2   2     2     R    R      R     -
POST   /login                                  403  403   403 403   403   403  403    403   f_login
GET    /ui                                     L    L     L   L     L     404  404    404   -
GET    /ui/new                                 L    L     L   L     L     2    2      2     -
GET    /ui/new/{tpl}                           L    L     L   L     L     2    2      2     -
POST   /ui/new/{tpl}                           403  403   403 403   403   R    403    R     f_new
GET    /ui/workloads/team-a/{wl}               L    L     L   L     L     2    2      2     -
POST   /ui/workloads/team-a/{wl}/cancel        403  403   403 403   403   R    403    R     s_wl_cancel
POST   /ui/workloads/team-a/{wl}/verdict       403  403   403 403   403   403  403    R     s_wl_verdict
GET    /ui/models                              L    L     L   L     L     2    2      2     -
GET    /ui/queues                              L    L     L   L     L     2    2      2     -
POST   /ui/queues/{cq}/quota                   403  403   403 403   403   403  403    R     f_quota
GET    /ui/gpus                                L    L     L   L     L     2    2      2     -
GET    /ui/reports                             L    L     L   L     L     2    2      2     -
GET    /ui/account                             L    L     L   L     L     2    2      2     -
POST   /ui/account                             403  403   403 403   403   422  403    422   f_account
GET    /ui/admin                               L    L     L   L     L     403  2      2     -
POST   /ui/admin/apply                         403  403   403 403   403   403  403    2     f_apply
POST   /ui/admin/create                        403  403   403 403   403   403  403    2     f_create
POST   /ui/admin/update                        403  403   403 403   403   403  403    2     f_update
POST   /ui/admin/password                      403  403   403 403   403   403  403    2     f_password
POST   /ui/admin/delete                        403  403   403 403   403   403  403    2     f_delete
GET    /assets/{asset}                         2    2     2   2     2     2    2      2     -
GET    /favicon.ico                            2    2     2   2     2     2    2      2     -
# (the sessions rows come before the logout row, which ends the portal sessions they use;
# the admin (nocsrf, asess) is no member of team-a, and a session's pages would run as
# the admin: 404)
GET    /ui/sessions/team-a/sx/x                L    L     L   L     L     2    404    404   s_session
POST   /ui/sessions/team-a/sx/x                403  403   403 403   403   2    404    404   s_session
PUT    /ui/sessions/team-a/sx/x                403  403   403 403   403   2    404    404   s_session
PATCH  /ui/sessions/team-a/sx/x                403  403   403 403   403   2    404    404   s_session
DELETE /ui/sessions/team-a/sx/x                403  403   403 403   403   2    404    404   s_session
POST   /logout                                 403  403   403 403   403   L    403    L     s_logout
T
)

# The helpers below set globals rather than print: a cell is several hundred requests' worth
# of forks otherwise, and this machine is shared.
# creds P KIND: CRED=(the curl arguments of principal P for a path of KIND: api, portal...)
creds() {
  CRED=()
  case $1 in
    alice) CRED=(-H "Authorization: Bearer $ALICE") ;;
    bob) CRED=(-H "Authorization: Bearer $BOB") ;;
    admin) CRED=(-H "Authorization: Bearer $ADMIN") ;;
    gwkey) CRED=(-H "Authorization: Bearer $GWKEY") ;;
    sess) CRED=(-b "$SJAR"); [[ $2 == api ]] && CRED+=(-H "X-CSRF-Token: $SCSRF") ;;
    nocsrf) CRED=(-b "$AJAR") ;;
    asess) CRED=(-b "$AJAR"); [[ $2 == api ]] && CRED+=(-H "X-CSRF-Token: $ACSRF") ;;
  esac
  CSRF_FIELD=""   # the _csrf form field P sends with a portal form
  case $1 in sess) CSRF_FIELD=$SCSRF ;; asess) CSRF_FIELD=$ACSRF ;; esac
  return 0
}
kind_of() { case $1 in /api/*) KIND=api ;; /v1/*) KIND=v1 ;; /healthz|/health|/readyz|/metrics) KIND=probe ;; *) KIND=portal ;; esac; }
fill() { local k; FILLED=$1; for k in "${!V[@]}"; do FILLED=${FILLED//"{$k}"/${V[$k]}}; done; }
reset_v() { local k; for k in "${!DEF[@]}"; do V[$k]=${DEF[$k]}; done; }

# call P METHOD PATH: GOT="STATUS" or "303>LOCATION"; sends BODY (API, /v1) or FORM (portal)
call() {
  local who=$1 m=$2 path=$3 args=() out f
  kind_of "$path"
  creds "$who" "$KIND"
  args=("${CRED[@]}")
  if [[ $KIND == portal && $m == POST ]]; then
    args+=(-H "Content-Type: application/x-www-form-urlencoded" --data-urlencode "_csrf=$CSRF_FIELD")
    for f in "${FORM[@]}"; do args+=(--data-urlencode "$f"); done
  elif [[ -n "$BODY" && $m != GET ]]; then
    args+=(-H "Content-Type: ${BODY_TYPE:-application/json}" --data-binary "$BODY")
  fi
  out=$(curl -s -m 10 -o "$TMP/cell.body" -w '%{http_code} %{redirect_url}' -X "$m" "${args[@]}" "$S$path")
  if [[ ${out%% *} == 3* ]]; then GOT="${out%% *}>${out#* }"; else GOT=${out%% *}; fi
}

# cell_ok WANT GOT
cell_ok() {
  case $1 in
    2) [[ $2 == 2?? ]] ;;
    R) [[ $2 == 303\>* && $2 != *"/login" ]] ;;
    L) [[ $2 == 303\>*"/login" ]] ;;
    *) [[ $2 == "$1" ]] ;;
  esac
}

rows=0 cells=0 allow=0 deny=0 hidden=0
declare -A METHODS   # path template -> the methods its rows list
while read -r m tpl rest; do
  [[ -z "$m" || $m == \#* ]] && continue
  read -r -a want <<<"$rest"
  setup=${want[8]:-}
  if ((${#want[@]} != 9)); then fail "table: row $m $tpl has ${#want[@]} fields, not 8 cells and a setup"; continue; fi
  rows=$((rows + 1))
  [[ " ${METHODS[$tpl]:-} " == *" $m "* ]] || METHODS[$tpl]+=" $m"
  bad=""
  for i in "${!PRINCIPALS[@]}"; do
    who=${PRINCIPALS[$i]} w=${want[$i]}
    BODY="" FORM=() BODY_TYPE=""
    reset_v
    [[ $setup != - ]] && "$setup"
    [[ $BODY == @* ]] && { BODY=$(<"${BODY#@}"); BODY_TYPE=application/yaml; }
    [[ $setup == b_apply ]] && BODY_TYPE=application/yaml
    fill "$tpl"
    call "$who" "$m" "$FILLED"
    cells=$((cells + 1))
    case $w in 401|403|L) deny=$((deny + 1)) ;; 404) hidden=$((hidden + 1)) ;; *) allow=$((allow + 1)) ;; esac
    cell_ok "$w" "$GOT" || bad+=" $who:want=$w,got=$GOT($(head -c 160 "$TMP/cell.body" | tr '\n' ' '))"
  done
  if [[ -z "$bad" ]]; then ok "$m $tpl"; else fail "$m $tpl:$bad"; fi
done <<<"$TABLE"
routes=0; for tpl in "${!METHODS[@]}"; do for m in ${METHODS[$tpl]}; do routes=$((routes + 1)); done; done
echo "  matrix: $routes routes ($rows rows) x ${#PRINCIPALS[@]} principals = $cells cells ($allow allow, $deny deny, $hidden 404)"
new_sessions   # the logout row ended the sessions it used

# ---- every route the code dispatches on has a row ----------------------------------------
# The route words: each string a dispatcher compares a path or a path segment with. The
# patterns are the dispatch idioms of these files; a dispatcher written another way must
# be added here (and a route added the same way fails until the table has its row).
route_words() {
  cd "$ROOT/src" || return 1
  {
    grep -ohE 'gx_mux_mount\(&r->mux, "=?/[a-z0-9/]*"' daemon/root.c | grep -oE '"=?/[^"]*"'
    grep -ohE '!strcmp\((what|p|path|a|op|endpoint), "[^"]+"\)' api/routes.c maas/maas.c portal/portal.c portal/pages_admin.c
    grep -ohE '!strcmp\(c->seg\[[0-9]\], "[^"]+"\)|!strcmp\(segs\[[0-9]\], "[^"]+"\)' api/routes.c portal/portal.c gpu/api.c
    grep -ohE '!strncmp\(p, "/[^"]+", [0-9]+\)' portal/portal.c
    sed -n '/^static const struct { const char \*plural/,/};/p' api/routes.c | grep -oE '\{"[a-z]+"'
    grep -oE 'gateway_collections\[\] = \{[^}]*\}' daemon/root.c | grep -oE '"[a-z]+"'
  } | grep -oE '"[^"]*"|\{"[^"]*"' | tr -d '{"=' | tr '/' '\n' | grep -vE '^(GET|POST|HEAD|DELETE|)$' | sort -u
}
words=$(route_words)
expect_match "route words read from the sources" "$(wc -l <<<"$words")" '^[3-9][0-9]$'
paths=$(awk '!/^#/ && NF {print $2}' <<<"$TABLE" | tr '/' '\n' | sort -u)
missing=$(comm -23 <(echo "$words") <(echo "$paths") | tr '\n' ' ')
expect_eq "every route word of the code has a row in the table" "$missing" ""

# ---- methods a row does not list are refused, even to an admin -----------------------------
reset_v; V[key]=$(TOKEN=$ALICE api GET /api/v1/keys | sed '$d' | jq -r '.items[0].id')
for tpl in "${!METHODS[@]}"; do
  fill "$tpl"; path=$FILLED
  kind_of "$path"
  case $KIND in v1) who=gwkey ;; portal) who=asess ;; *) who=admin ;; esac
  bad=""
  for m in GET POST PUT PATCH DELETE; do
    [[ " ${METHODS[$tpl]} " == *" $m "* ]] && continue
    BODY="" FORM=()
    call "$who" "$m" "$path"
    [[ $GOT == 404 || $GOT == 405 ]] || bad+=" $m:$GOT"
  done
  [[ -z "$bad" ]] && ok "no other method on $tpl" || fail "methods not in the table answered on $tpl:$bad"
done

# ---- the models a caller may use, and who /metrics names -----------------------------------
# which of open-model (tiers open, restricted) and secret-model (restricted) a list holds
two() { jq -r "[$1] | map(select(. == \"open-model\" or . == \"secret-model\" or . == \"open-llm\" or . == \"secret-llm\")) | sort | join(\" \")"; }
expect_eq "alice's /api/v1/models: not the model outside her tiers" \
  "$(TOKEN=$ALICE api GET /api/v1/models | sed '$d' | two '.items[].name')" "open-model"
expect_eq "... nor through her portal session" \
  "$(curl -s -b "$SJAR" -H "X-CSRF-Token: $SCSRF" "$S/api/v1/models" | two '.items[].name')" "open-model"
expect_eq "bob's /api/v1/models: both (restricted is open to team-b)" \
  "$(TOKEN=$BOB api GET /api/v1/models | sed '$d' | two '.items[].name')" "open-model secret-model"
expect_eq "the admin's /api/v1/models: every model" "$(api GET /api/v1/models | sed '$d' | two '.items[].name')" \
  "open-model secret-model"
expect_eq "alice's key's /v1/models: only her tier's" \
  "$(curl -s -H "Authorization: Bearer $GWKEY" "$S/v1/models" | two '.data[].id')" "open-llm"
m=$(curl -s "$S/metrics")
expect_eq "anonymous /metrics names no user" "$(grep -cE '[{,]user="' <<<"$m")" 0
expect_eq "a user's token does not show per-user series either" \
  "$(curl -s -H "Authorization: Bearer $ALICE" "$S/metrics" | grep -cE '[{,]user="')" 0
check "an admin's token shows them" grep -q 'authorized_calls{model="open-model",tier="open",user="alice"}' \
  <<<"$(curl -s -H "Authorization: Bearer $ADMIN" "$S/metrics")"

finish
