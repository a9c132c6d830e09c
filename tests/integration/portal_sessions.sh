#!/usr/bin/env bash
# The portal with curl's cookie jar (no browser needed): sessions survive a restart of
# the daemon (kill -9, then start again on the same data folder), with the same CSRF
# token; sign-out and user deletion survive it too; the database holds only keyed
# hashes of session ids. And the Models page shows only what the user's tiers open:
# a model outside them is not shown, its tier is not offered, a user without any tier
# is told why.
source "$(dirname "$0")/lib.sh"

cfg=$(write_config portal-sessions "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
DB=$TMP/data/gpuaas.db

# page JAR PATH: the status, then the body (redirects not followed)
page() { curl -s -b "$1" -c "$1" -w '\n%{http_code}' "$GPUAAS_SERVER$2"; }
csrf_of() { grep -o 'name="csrf-token" content="[^"]*"' <<<"$1" | sed 's/.*content="//; s/"$//'; }
rows() { sqlite3 "$DB" "SELECT count(*) FROM portal_sessions $1"; }
has()   { if grep -qE -- "$3" <<<"$2"; then ok "$1"; else fail "$1: /$3/ is not in the page"; fi; }
hasnt() { if grep -qE -- "$3" <<<"$2"; then fail "$1: /$3/ is in the page"; else ok "$1"; fi; }

expect_eq "admin signs in with the token (303 to /)" "$(sign_in "$TMP/admin.jar" "$ADMIN_TOKEN")" 303
r=$(page "$TMP/admin.jar" /)
expect_eq "signed in: home page" "$(status_of "$r")" 200
CSRF=$(csrf_of "$r")
COOKIE=$(cookie_of "$TMP/admin.jar")
expect_eq "the session is stored" "$(rows '')" 1
check "the database holds no session id, only its hash" bash -c "[[ -n '$COOKIE' ]] && ! grep -qa -- '$COOKIE' '$DB' '$DB-wal'"
expect_eq "the stored hash is 32 bytes" "$(sqlite3 "$DB" 'SELECT length(id_hash) FROM portal_sessions')" 32

# a user for the deletion check, and the tiers and models for the Models page
u=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}')
ALICE=$(body_of "$u" | jq -r .token)
u=$(api POST /api/v1/users -d '{"name":"carol","namespaces":[]}')
CAROL=$(body_of "$u" | jq -r .token)
cat >"$TMP/gw.yaml" <<'Y'
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: open}
spec: {limits: {requestsPerMinute: 60}, namespaces: [team-a, team-b]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Tier
metadata: {name: restricted}
spec: {limits: {requestsPerMinute: 60}, namespaces: [team-b]}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: open-model}
spec: {servedNames: [open-llm], tiers: [open, restricted], url: "http://127.0.0.1:9/v1"}
---
apiVersion: gpuaas.dev/v1alpha1
kind: Model
metadata: {name: secret-model}
spec: {servedNames: [secret-llm], tiers: [restricted], url: "http://127.0.0.1:9/v1"}
Y
expect_eq "tiers and models applied" "$(status_of "$(api POST /api/v1/apply --data-binary @"$TMP/gw.yaml")")" 200
expect_eq "alice signs in" "$(sign_in "$TMP/alice.jar" "$ALICE")" 303
expect_eq "two sessions stored" "$(rows '')" 2

# ---- the Models page, by tier ----
m=$(page "$TMP/alice.jar" /ui/models)
expect_eq "alice: Models page" "$(status_of "$m")" 200
has "alice sees the model of her tier" "$m" 'data-model="open-llm"'
hasnt "alice does not see the model outside her tiers" "$m" 'secret-llm'
has "the key form offers her tier" "$m" '<option value="open" data-ns="team-a" data-max-days="[0-9]+">'
hasnt "the key form does not offer the other tier" "$m" 'value="restricted"'
has "her model card names only her tiers" "$m" 'your tiers: open<'
has "the playground lists her model" "$m" '<option value="open-llm">'
m=$(page "$TMP/admin.jar" /ui/models)
has "an admin sees every model" "$m" 'data-model="secret-llm"'
expect_eq "carol (no namespace) signs in" "$(sign_in "$TMP/carol.jar" "$CAROL")" 303
m=$(page "$TMP/carol.jar" /ui/models)
has "a user without a tier is told why" "$m" 'No model tier is open to you yet'
hasnt "... and offered no key form and no model" "$m" 'key-form|data-model=|chat-model'

# ---- restart: kill -9, start again on the same data folder ----
crash_daemon
start_daemon "$cfg" || { fail "daemon restart"; finish; exit 1; }
r=$(page "$TMP/admin.jar" /)
expect_eq "after a restart the session still works" "$(status_of "$r")" 200
expect_eq "... with the same CSRF token" "$(csrf_of "$r")" "$CSRF"
p=$(curl -s -b "$TMP/admin.jar" -w '\n%{http_code}' --data-urlencode "_csrf=$CSRF" --data-urlencode "password=aaaaaaaa1" \
      --data-urlencode "password2=bbbbbbbb2" "$GPUAAS_SERVER/ui/account")
expect_eq "... and a form posted with it is accepted (422: passwords differ, not 403)" "$(status_of "$p")" 422
a=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/admin.jar" -H "X-CSRF-Token: $CSRF" "$GPUAAS_SERVER/api/v1/workloads")
expect_eq "... and the pages' API calls work with it" "$a" 200
expect_eq "a forged cookie is still refused (redirect to sign-in)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -b "gx_session=$(printf 'A%.0s' $(seq 43))" "$GPUAAS_SERVER/")" 303

# ---- user deletion ends their sessions, also in the store ----
expect_eq "alice is deleted" "$(status_of "$(api DELETE /api/v1/users/alice)")" 200
expect_eq "her session row is gone (cascade)" "$(rows "WHERE user = 'alice'")" 0
expect_eq "her cookie no longer signs in" "$(status_of "$(page "$TMP/alice.jar" /)")" 303

# ---- a new password ends the other sessions ----
u=$(api POST /api/v1/users -d '{"name":"dave","namespaces":["team-a"]}')
expect_eq "dave signs in" "$(sign_in "$TMP/dave.jar" "$(body_of "$u" | jq -r .token)")" 303
o=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/admin.jar" --data-urlencode "_csrf=$CSRF" --data-urlencode "user=dave" \
      --data-urlencode "password=dave-new-password" "$GPUAAS_SERVER/ui/admin/password")
expect_eq "the admin sets dave's password" "$o" 200
expect_eq "... which ends dave's session" "$(status_of "$(page "$TMP/dave.jar" /)")" 303
expect_eq "... in the store too" "$(rows "WHERE user = 'dave'")" 0
expect_eq "carol signs in a second time" "$(sign_in "$TMP/carol2.jar" "$CAROL")" 303
C2=$(csrf_of "$(page "$TMP/carol2.jar" /)")
o=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/carol2.jar" --data-urlencode "_csrf=$C2" --data-urlencode "password=carol-password" \
      --data-urlencode "password2=carol-password" "$GPUAAS_SERVER/ui/account")
expect_eq "carol changes her password" "$o" 200
expect_eq "... her session where she did it goes on" "$(status_of "$(page "$TMP/carol2.jar" /)")" 200
expect_eq "... her other session ended" "$(status_of "$(page "$TMP/carol.jar" /)")" 303
cp "$TMP/carol2.jar" "$TMP/carol.jar"

# ---- sign-out survives a restart ----
o=$(curl -s -o /dev/null -w '%{http_code}' -b "$TMP/admin.jar" -c "$TMP/admin.jar" --data-urlencode "_csrf=$CSRF" "$GPUAAS_SERVER/logout")
expect_eq "sign out (303)" "$o" 303
expect_eq "the signed-out session is deleted from the store" "$(rows "WHERE user = 'admin'")" 0
stop_daemon
start_daemon "$cfg" || { fail "daemon restart 2"; finish; exit 1; }
expect_eq "after sign-out and a restart, the old cookie does not sign in" \
  "$(curl -s -o /dev/null -w '%{http_code}' -b "gx_session=$COOKIE" "$GPUAAS_SERVER/")" 303
expect_eq "carol's session is still there after a polite stop and start" "$(status_of "$(page "$TMP/carol.jar" /)")" 200

stop_daemon
check "no sanitizer report from the daemon" bash -c "! grep -qE 'Sanitizer|runtime error' '$TMP/serve.log'"
finish
