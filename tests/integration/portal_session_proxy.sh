#!/usr/bin/env bash
# Interactive sessions reachable through the portal (issue 17): a session's Job declares
# its port (annotation gpuaas.dev/session-port) and the portal relays
# /ui/sessions/NS/NAME/... to 127.0.0.1:PORT, as Open OnDemand does for Jupyter. The
# shipped interactive template, submitted through the portal's form, serves its folder
# (python3 -m http.server) and is reached by a signed-in user of its namespace and an
# (not by an admin who is no member, nor by another namespace's user: 404) or anyone not signed in; a session echo
# (session_echo.py) shows what is forwarded (no portal cookie, CSRF token or credential;
# the prefix stripped, X-Forwarded-Prefix set) and echoes a WebSocket through the relay;
# a port below 1024, or one a session started earlier declares, is refused.
source "$(dirname "$0")/lib.sh"
cfg=$(write_config portal-session "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml" \
        "$ROOT/examples/templates/interactive-session.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
S=$GPUAAS_SERVER
HOSTPORT=${S#http://}

ALICE=$(api POST /api/v1/users -d '{"name":"alice","namespaces":["team-a"]}' | sed '$d' | jq -r .token)
BOB=$(api POST /api/v1/users -d '{"name":"bob","namespaces":["team-b"]}' | sed '$d' | jq -r .token)
expect_eq "alice signs in" "$(sign_in "$TMP/alice.jar" "$ALICE")" 303
expect_eq "bob signs in" "$(sign_in "$TMP/bob.jar" "$BOB")" 303
expect_eq "the admin signs in" "$(sign_in "$TMP/admin.jar" "$ADMIN_TOKEN")" 303
# code JAR METHOD PATH [CURL ARGS]: the status (redirects not followed)
code() { local jar=$1 m=$2 p=$3; shift 3; curl -s -o "$TMP/out" -w '%{http_code}' ${jar:+-b "$jar"} -X "$m" "$@" "$S$p"; }

P1=$((20000 + RANDOM % 20000)); P2=$((P1 + 1))

# 1. the shipped template, through the portal's form, as alice
CSRF=$(curl -s -b "$TMP/alice.jar" "$S/ui/new/interactive-session" | grep -o 'name="_csrf" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
loc=$(curl -s -o /dev/null -w '%{redirect_url}' -b "$TMP/alice.jar" --data-urlencode "_csrf=$CSRF" -d namespace=team-a -d queue=main \
      -d kind=web -d gpus=1 -d hours=1 -d "port=$P1" -d action=submit "$S/ui/new/interactive-session")
expect_match "the interactive template submits a session" "$loc" '/ui/workloads/team-a/session-[a-z0-9]+$'
SESS=${loc##*/}
check "its Job declares the session port" bash -c "[[ \$(curl -s -H 'Authorization: Bearer $ADMIN_TOKEN' '$S/api/v1/workloads/team-a/$SESS' | jq .sessionPort) == $P1 ]]"
wait_phase "team-a/$SESS" Running 30 || fail "the session does not run"
reach() { [[ $(code "$TMP/alice.jar" GET "/ui/sessions/team-a/$SESS/") == 200 ]]; }
until_ok 30 reach || fail "the session never answered through the portal: $(code "$TMP/alice.jar" GET "/ui/sessions/team-a/$SESS/") $(head -c 300 "$TMP/out")"
h=$(curl -s -D - -o /dev/null -b "$TMP/alice.jar" "$S/ui/sessions/team-a/$SESS/")
expect_match "alice reaches her session's web server" "$h" 'Server: SimpleHTTP'
# its pages run in the portal's origin with the viewer's session: an admin who is no
# member of team-a must not hand team-a the admin's portal by opening it
expect_eq "an admin of other namespaces does not reach it (404)" "$(code "$TMP/admin.jar" GET "/ui/sessions/team-a/$SESS/")" 404
expect_eq "bob (team-b) does not: 404, as if absent" "$(code "$TMP/bob.jar" GET "/ui/sessions/team-a/$SESS/")" 404
expect_eq "nobody signed in: the sign-in page" "$(code "" GET "/ui/sessions/team-a/$SESS/")" 303
expect_match "... (to /login)" "$(curl -s -o /dev/null -w '%{redirect_url}' "$S/ui/sessions/team-a/$SESS/")" '/login$'
expect_eq "nobody signed in, a POST: 403" "$(code "" POST "/ui/sessions/team-a/$SESS/" -d x=1)" 403
expect_eq "an API token is not a portal sign-in" "$(code "" GET "/ui/sessions/team-a/$SESS/" -H "Authorization: Bearer $ALICE")" 303
expect_eq "without the trailing slash: redirected to it" "$(code "$TMP/alice.jar" GET "/ui/sessions/team-a/$SESS")" 303

# 2. what is forwarded, and a WebSocket, through a session echo
PY=$(<"$ROOT/tests/integration/session_echo.py")
echo_job() {  # echo_job NAME PORT: a session running session_echo.py on PORT (no GPU)
  job "$1" team-a main 0 "python3 - $2 <<'PYEOF'
$PY
PYEOF" | sed "s|^  labels:|  annotations: {gpuaas.dev/session-port: \"$2\"}\n  labels:|"
}
echo_job echo "$P2" >"$TMP/echo.yaml"
expect_eq "an echo session submitted" "$(status_of "$(api POST /api/v1/workloads --data-binary @"$TMP/echo.yaml" -H 'Content-Type: application/yaml')")" 201
wait_phase team-a/echo Running 30 || fail "the echo session does not run"
reach_echo() { [[ $(code "$TMP/alice.jar" GET /ui/sessions/team-a/echo/) == 200 ]]; }
until_ok 30 reach_echo || fail "the echo session never answered"
AC=$(cookie_of "$TMP/alice.jar")
b=$(curl -s -b "gx_session=$AC; app=kept" -H "X-CSRF-Token: secret-csrf" -H "X-Forwarded-User: mallory" \
      "$S/ui/sessions/team-a/echo/a%20b/c?x=1&y=two%20words")
expect_match "the session gets its own path and query, the prefix stripped" "$b" 'target=/a%20b/c\?x=1&y=two%20words'
expect_match "... its own cookies" "$b" 'cookie=app=kept'
hasnt() { if grep -qE -- "$3" <<<"$2"; then fail "$1: /$3/ was forwarded"; else ok "$1"; fi; }
hasnt "... not the portal's session cookie" "$b" 'gx_session'
hasnt "... nor its CSRF token" "$b" 'secret-csrf'
hasnt "... nor the trusted proxy's identity header" "$b" 'mallory'
expect_match "... and the prefix it is served under" "$b" 'prefix=/ui/sessions/team-a/echo'
b=$(curl -s -b "$TMP/alice.jar" -d 'q=1&r=2' "$S/ui/sessions/team-a/echo/form")
expect_match "a POST reaches it (the session's own forms need no portal token)" "$b" 'method=POST'
expect_match "... with its body" "$b" 'body=q=1&r=2'
expect_eq "a POST to a session from another site: 403" \
  "$(code "$TMP/alice.jar" POST /ui/sessions/team-a/echo/form -d q=1 -H 'Origin: http://evil.example')" 403
ws=$(python3 - "$HOSTPORT" /ui/sessions/team-a/echo/ws "$AC" <<'PY'
import base64, os, socket, sys
hp, path, cookie = sys.argv[1:4]
host, port = hp.split(":")
s = socket.create_connection((host, int(port)), timeout=10)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
           "Sec-WebSocket-Version: 13\r\nCookie: gx_session=%s\r\nOrigin: http://%s\r\n\r\n" % (path, hp, key, cookie, hp)).encode())
h = b""
while b"\r\n\r\n" not in h:
    h += s.recv(1)
print(h.split(b"\r\n")[0].decode())
for msg in (b"hello ws", b"and again"):
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
    hd = s.recv(2)
    data = b""
    while len(data) < hd[1] & 127:
        data += s.recv(64)
    print(data.decode())
PY
)
expect_match "a WebSocket upgrade goes through" "$ws" '101 Switching Protocols'
expect_match "... and echoes both messages" "$ws" $'hello ws\nand again'
# bob's cookie on a WebSocket: refused before any upgrade
BC=$(cookie_of "$TMP/bob.jar")
expect_eq "bob's WebSocket to alice's session: 404" \
  "$(curl -s -o /dev/null -w '%{http_code}' -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==' \
      -H 'Sec-WebSocket-Version: 13' -b "gx_session=$BC" "$S/ui/sessions/team-a/echo/ws")" 404

# 3. a session's port is its own
# (it does not listen: the port is the first one's; the portal must not relay to it)
job echo2 team-a main 0 "sleep 600" | sed "s|^  labels:|  annotations: {gpuaas.dev/session-port: \"$P2\"}\n  labels:|" >"$TMP/echo2.yaml"
api POST /api/v1/workloads --data-binary @"$TMP/echo2.yaml" -H 'Content-Type: application/yaml' >/dev/null
wait_phase team-a/echo2 Running 30 || fail "the second echo session does not run"
expect_eq "a port a session started earlier holds: 409" "$(code "$TMP/alice.jar" GET /ui/sessions/team-a/echo2/)" 409
expect_match "... saying why" "$(cat "$TMP/out")" 'started earlier, declares the same port'
expect_eq "the first keeps it" "$(code "$TMP/alice.jar" GET /ui/sessions/team-a/echo/)" 200
job low team-a main 0 "sleep 600" | sed 's|^  labels:|  annotations: {gpuaas.dev/session-port: "80"}\n  labels:|' >"$TMP/low.yaml"
api POST /api/v1/workloads --data-binary @"$TMP/low.yaml" -H 'Content-Type: application/yaml' >/dev/null
wait_phase team-a/low Running 30 || fail "the low-port session does not run"
expect_eq "a port below 1024 is refused" "$(code "$TMP/alice.jar" GET /ui/sessions/team-a/low/)" 404
expect_match "... saying why" "$(cat "$TMP/out")" 'between 1024 and 65535'
api POST /api/v1/workloads/team-a/echo/cancel >/dev/null
wait_phase team-a/echo Deactivated 30 || true
expect_eq "an ended session is not reachable: 409" "$(code "$TMP/alice.jar" GET /ui/sessions/team-a/echo/)" 409
finish
