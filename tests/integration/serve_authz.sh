#!/usr/bin/env bash
# Users, tokens and namespaces: a user sees and acts on its own namespaces only;
# only an admin applies configuration and manages users; a deleted user's token
# stops working at once; tokens are stored hashed.
source "$(dirname "$0")/lib.sh"
G=$GPUAAS_BIN
cfg=$(write_config authz "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }

alice=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)
bob=$("$G" users create bob --namespaces team-b -o json | jq -r .token)
expect_match "alice got a token" "$alice" '^gpt_[0-9a-f]{12}_'
expect_match "bob got a token (CLI)" "$bob" '^gpt_[0-9a-f]{12}_'
check "the token is not stored in clear" bash -c "! grep -q '${alice#gpt_*_}' $TMP/data/gpuaas.db"

job a1 team-a main 0 'sleep 1' > "$TMP/a1.yaml"
job b1 team-b main 0 'sleep 1' > "$TMP/b1.yaml"
expect_eq "alice submits in team-a" "$(GPUAAS_TOKEN=$alice "$G" submit -f "$TMP/a1.yaml" >/dev/null 2>&1; echo $?)" 0
out=$(TOKEN=$alice api POST /api/v1/workloads --data-binary @"$TMP/b1.yaml")
expect_eq "alice cannot submit in team-b" "$(status_of "$out")" 403
expect_eq "bob submits in team-b" "$(GPUAAS_TOKEN=$bob "$G" submit -f "$TMP/b1.yaml" >/dev/null 2>&1; echo $?)" 0
expect_eq "bob cannot read alice's workload" "$(status_of "$(TOKEN=$bob api GET /api/v1/workloads/team-a/a1)")" 403
expect_eq "bob cannot cancel alice's workload" "$(status_of "$(TOKEN=$bob api POST /api/v1/workloads/team-a/a1/cancel)")" 403
expect_eq "bob's list holds only team-b" "$(TOKEN=$bob api GET /api/v1/workloads | sed '$d' | jq -r '[.items[].namespace] | unique | join(",")')" team-b
expect_eq "bob cannot list team-a" "$(status_of "$(TOKEN=$bob api GET '/api/v1/workloads?namespace=team-a')")" 403
expect_eq "admin sees both" "$(api GET /api/v1/workloads | sed '$d' | jq '.items | length')" 2
expect_eq "alice cannot apply" "$(status_of "$(TOKEN=$alice api POST /api/v1/apply --data-binary @"$ROOT/examples/demo/queues.yaml")")" 403
expect_eq "alice cannot create users" "$(status_of "$(TOKEN=$alice api POST /api/v1/users -d '{"name":"eve"}')")" 403
expect_eq "alice's local queues are her own" "$(TOKEN=$alice api GET /api/v1/localqueues | sed '$d' | jq -r '[.items[].namespace] | unique | join(",")')" team-a
expect_eq "no token is 401" "$(curl -s -o /dev/null -w '%{http_code}' "$GPUAAS_SERVER/api/v1/workloads")" 401
expect_eq "a wrong token is 401" "$(status_of "$(TOKEN=gpt_000000000000_nope api GET /api/v1/workloads)")" 401
out=$(GPUAAS_TOKEN=gpt_000000000000_nope "$G" ls 2>&1); rc=$?
expect_eq "CLI exits 1 on 401" "$rc" 1
expect_match "CLI says how to set the token" "$out" "GPUAAS_TOKEN"
expect_eq "whoami" "$(GPUAAS_TOKEN=$alice "$G" whoami -o json | jq -r .name)" alice
expect_eq "duplicate user is a conflict" "$(status_of "$(api POST /api/v1/users -d '{"name":"alice","namespaces":[]}')")" 409
expect_eq "bad user name" "$(status_of "$(api POST /api/v1/users -d '{"name":"Bad Name"}')")" 422
"$G" users delete bob >/dev/null
expect_eq "deleted user's token stops working" "$(status_of "$(TOKEN=$bob api GET /api/v1/workloads)")" 401
# tokens survive a restart (hashes in SQLite, pepper in the data dir)
stop_daemon
start_daemon "$cfg" || { fail "restart"; finish; exit 1; }
expect_eq "alice's token works after restart" "$(status_of "$(TOKEN=$alice api GET /api/v1/whoami)")" 200
finish
