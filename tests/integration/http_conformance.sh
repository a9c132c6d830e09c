#!/usr/bin/env bash
# The HTTP/1.1 server (src/net/http.c) over real sockets: keep-alive and close rules,
# pipelining, HEAD, 100-continue, chunked request bodies, body limits, and the strict
# refusals (bad framing 400, unknown coding 501, oversized head 431, version 505), in
# OpenAI's error envelope on the gateway's /v1/ paths and the daemon's elsewhere.
# Raw requests go through python3 so that the bytes on the wire are exactly ours.
source "$(dirname "$0")/lib.sh"
MAX_BODY=65536
cfg=$(write_config http "$ROOT/examples/demo/node.yaml" "$ROOT/examples/demo/queues.yaml")
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
PORT=${GPUAAS_SERVER##*:}

# raw BYTES [HALF_CLOSE]: send BYTES (printf escapes) to the daemon, print all it
# answers until it closes or is quiet for 1.5 s, then "<closed>" or "<open>".
raw() {
  python3 - "$PORT" "$1" "${2:-}" <<'PY'
import socket, sys
port, data, half = int(sys.argv[1]), sys.argv[2].encode().decode('unicode_escape').encode('latin-1'), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(data)
if half: s.shutdown(socket.SHUT_WR)
s.settimeout(1.5)
out, state = b"", "<open>"
try:
    while True:
        b = s.recv(65536)
        if not b: state = "<closed>"; break
        out += b
except socket.timeout:
    pass
except ConnectionResetError:
    state = "<reset>"
sys.stdout.write(out.decode('latin-1') + "\n" + state + "\n")
PY
}
count() { grep -c "$2" <<<"$1"; }
status_line() { head -n1 <<<"$1" | tr -d '\r'; }
H="Host: x\r\n"

# keep-alive by default, pipelined requests answered in order
out=$(raw "GET /healthz HTTP/1.1\r\n$H\r\nGET /nope HTTP/1.1\r\n$H\r\nGET /healthz HTTP/1.1\r\n$H\r\n")
expect_eq "three pipelined requests, three answers" "$(count "$out" '^HTTP/1.1 ')" 3
expect_match "pipelined answers in order" "$(grep '^HTTP/1.1 ' <<<"$out" | tr -d '\r' | tr '\n' ,)" "^HTTP/1.1 200 OK,HTTP/1.1 [0-9]+ [A-Za-z ]+,HTTP/1.1 200 OK,$"
expect_eq "HTTP/1.1 stays open" "$(tail -n1 <<<"$out")" "<open>"

# HTTP/1.0 closes unless asked; Connection: close is honoured
out=$(raw "GET /healthz HTTP/1.0\r\n\r\n")
expect_eq "HTTP/1.0 answered" "$(status_line "$out")" "HTTP/1.1 200 OK"
expect_eq "HTTP/1.0 closes" "$(tail -n1 <<<"$out")" "<closed>"
out=$(raw "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
expect_match "HTTP/1.0 keep-alive acknowledged" "$out" "Connection: keep-alive"
expect_eq "HTTP/1.0 keep-alive stays open" "$(tail -n1 <<<"$out")" "<open>"
out=$(raw "GET /healthz HTTP/1.1\r\n${H}Connection: close\r\n\r\nGET /healthz HTTP/1.1\r\n$H\r\n")
expect_eq "Connection: close answers once" "$(count "$out" '^HTTP/1.1 ')" 1
expect_eq "Connection: close closes" "$(tail -n1 <<<"$out")" "<closed>"
# a client that sends and half-closes still gets every answer
out=$(raw "GET /healthz HTTP/1.1\r\n$H\r\nGET /healthz HTTP/1.1\r\n$H\r\n" half)
expect_eq "half-closed client gets both answers" "$(count "$out" '^HTTP/1.1 200')" 2

# HEAD: the headers of GET, no body
out=$(raw "HEAD /healthz HTTP/1.1\r\n$H\r\nGET /healthz HTTP/1.1\r\n$H\r\n")
expect_eq "HEAD then GET: two answers" "$(count "$out" '^HTTP/1.1 200')" 2
expect_eq "HEAD has no body (only GET's 'ok')" "$(count "$out" '^ok')" 1

# strict refusals
out=$(raw "GET /healthz HTTP/1.1\r\n\r\n")
expect_eq "HTTP/1.1 without Host is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
out=$(raw "GET  /healthz HTTP/1.1\r\n$H\r\n")
expect_eq "malformed request line is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
expect_match "the 400 is a JSON error" "$out" '"reason": "BadRequest"'
out=$(raw "GET /healthz HTTP/2.0\r\n$H\r\n")
expect_eq "HTTP/2.0 request line is 505" "$(status_line "$out")" "HTTP/1.1 505 HTTP Version Not Supported"
out=$(raw "GET /healthz HTTP/1.1\r\n${H}X-A: 1\r\n  folded\r\n\r\n")
expect_eq "obs-fold is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
out=$(raw "GET /heal%zzthz HTTP/1.1\r\n$H\r\n")
expect_eq "bad percent-escape is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
expect_eq "Content-Length with Transfer-Encoding is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
expect_eq "and the connection closes" "$(tail -n1 <<<"$out")" "<closed>"
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
expect_eq "conflicting Content-Length is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n")
expect_eq "unknown transfer coding is 501" "$(status_line "$out")" "HTTP/1.1 501 Not Implemented"
big=$(head -c 17000 /dev/zero | tr '\0' a)
out=$(raw "GET /healthz HTTP/1.1\r\n${H}X-Big: $big\r\n\r\n")
expect_eq "a 17 KB head is 431" "$(status_line "$out")" "HTTP/1.1 431 Request Header Fields Too Large"
many=$(for i in $(seq 1 101); do printf 'X-H%d: v\\r\\n' "$i"; done)
out=$(raw "GET /healthz HTTP/1.1\r\n$H$many\r\n")
expect_eq "101 headers is 431" "$(status_line "$out")" "HTTP/1.1 431 Request Header Fields Too Large"
out=$(raw "GET /healthz HTTP/1.1\r\n${H}Expect: something\r\n\r\n")
expect_eq "unknown Expect is 417" "$(status_line "$out")" "HTTP/1.1 417 Expectation Failed"

# 100-continue: the interim answer, then the final one after the body
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Authorization: Bearer $GPUAAS_TOKEN\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
expect_eq "Expect: 100-continue gets 100 Continue" "$(status_line "$out")" "HTTP/1.1 100 Continue"
expect_eq "and no final answer before the body" "$(count "$out" '^HTTP/1.1 ')" 1
# curl sends Expect for bodies over 1 KiB: the request must go through
yaml=$TMP/q.yaml
{ echo "apiVersion: kueue.x-k8s.io/v1beta2"; echo "kind: LocalQueue"; echo "metadata: {name: lq-http, namespace: team-a}";
  echo "spec: {clusterQueue: nosuch}"; for i in $(seq 1 60); do echo "# padding line $i to pass one KiB ......"; done; } > "$yaml"
o1=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' --data-binary @"$yaml")
expect_match "a 2 KB body through 100-continue is answered" "$(status_of "$o1")" '^[24][0-9][0-9]$'
# the same body chunked: the same answer
o2=$(api POST /api/v1/apply -H 'Content-Type: application/yaml' -H 'Transfer-Encoding: chunked' --data-binary @"$yaml")
expect_eq "chunked body: the same object, unchanged" "$(status_of "$o2") $(body_of "$o2" | jq -c '.items[0] | [.name, .action]')" "$(status_of "$o1") [\"lq-http\",\"unchanged\"]"

# body limits: 413 as JSON, and the connection still serves the next request
body=$(head -c 70000 /dev/zero | tr '\0' a)
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Content-Length: 70000\r\n\r\n${body}GET /healthz HTTP/1.1\r\n$H\r\n")
expect_eq "body over maxBodyBytes is 413" "$(status_line "$out")" "HTTP/1.1 413 Content Too Large"
expect_match "413 says which limit" "$out" "limits.maxBodyBytes"
expect_eq "the next request on the connection is served" "$(count "$out" '^HTTP/1.1 200')" 1
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Content-Length: 900000000\r\n\r\nabc")
expect_eq "a huge declared body is refused at once" "$(status_line "$out")" "HTTP/1.1 413 Content Too Large"
expect_eq "and the connection closes" "$(tail -n1 <<<"$out")" "<closed>"
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Content-Length: 70000\r\nExpect: 100-continue\r\n\r\n")
expect_eq "100-continue with a body over the limit: 413, no 100" "$(status_line "$out")" "HTTP/1.1 413 Content Too Large"
out=$(raw "POST /api/v1/apply HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\n")
expect_eq "malformed chunk size is 400" "$(status_line "$out")" "HTTP/1.1 400 Bad Request"

# The OpenAI surface (/v1/, the gateway): what the HTTP layer refuses itself comes in
# OpenAI's envelope {"error":{"message","type","param":null,"code"}}, with no daemon
# fields, even when the head never parsed (the target is read from the raw line).
# envelopes REQ...: each request (printf escapes) on its own connection; one line per
# answer: "STATUS type=T code=C param=P fields=F | MESSAGE" ("not-json" if it is not).
envelopes() {
  python3 - "$PORT" "$@" <<'PY'
import json, socket, sys
for req in sys.argv[2:]:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(req.encode().decode("unicode_escape").encode("latin-1"))
    s.settimeout(3)
    t = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            t += b
    except (socket.timeout, ConnectionResetError):
        pass
    t = t.decode("latin-1")
    status = t.split(" ", 2)[1] if t.startswith("HTTP/1.1 ") else "?"
    try:
        e = json.loads(t.split("\r\n\r\n", 1)[1])["error"]
        m = e.get("message")
        print(status, "type=%s code=%s param=%s fields=%s | %s" % (e.get("type"), e.get("code"),
              json.dumps(e.get("param", "absent")), ",".join(sorted(e)), m if isinstance(m, str) and m else "NO MESSAGE"))
    except Exception as x:
        print(status, "not-json", type(x).__name__)
PY
}
big=$(head -c 20000 /dev/zero | tr '\0' a)
mapfile -t got < <(envelopes \
  "POST /v1/chat/completions HTTP/1.1\r\n${H}X-Big: $big\r\n\r\n" \
  "POST /v1/chat/completions HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" \
  "POST /v1/embeddings HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n" \
  "GET /v1/models HTTP/2.0\r\n$H\r\n" \
  "POST /v1/completions HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\n" \
  "GET /v1/models HTTP/1.1\r\n${H}Expect: something\r\n\r\n" \
  "POST /api/v1/apply HTTP/1.1\r\n${H}X-Big: $big\r\n\r\n" \
  "GET /v1 HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
F="param=null fields=code,message,param,type"
expect_eq "/v1/: a 20 KB head is 431 in OpenAI's envelope" "${got[0]% | *}" "431 type=invalid_request_error code=headers_too_large $F"
expect_eq "/v1/: Content-Length with Transfer-Encoding is 400 in OpenAI's envelope" "${got[1]% | *}" "400 type=invalid_request_error code=bad_request $F"
expect_eq "...and says why" "${got[1]#* | }" "both Content-Length and Transfer-Encoding"
expect_eq "/v1/: unknown transfer coding is 501, a server_error" "${got[2]% | *}" "501 type=server_error code=not_implemented $F"
expect_eq "/v1/: a bad version (request line unparsed) is 505 in OpenAI's envelope" "${got[3]% | *}" "505 type=server_error code=http_version_not_supported $F"
expect_eq "/v1/: malformed chunked body is 400 in OpenAI's envelope" "${got[4]% | *}" "400 type=invalid_request_error code=bad_request $F"
expect_eq "/v1/: unknown Expect is 417 in OpenAI's envelope" "${got[5]% | *}" "417 type=invalid_request_error code=expectation_failed $F"
# elsewhere the daemon's envelope stays (the CLI reads code/reason), and has a message
expect_eq "/api/: a 20 KB head keeps the daemon's envelope, with a message" "${got[6]}" \
  '431 type=None code=431 param="absent" fields=code,message,reason | request line and headers larger than 16 KiB'
expect_eq "/v1 without the slash is not the OpenAI surface" "${got[7]% | *}" '400 type=None code=400 param="absent" fields=code,message,reason'

# over a connection limit (here the default per address, 256; http_limits.sh has the rest)
# the target is unknown: the daemon's envelope, but with error.message for OpenAI clients,
# and a Content-Length that is the body's
out=$(python3 - "$PORT" <<'PY'
import json, socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(256)]
s, out = None, b""
for _ in range(50):                    # until the daemon has accepted all 256
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(2)
    try:
        out = s.recv(65536)
    except socket.timeout:
        out = b""
    if out: break
    s.close(); time.sleep(0.1)
while True:
    b = s.recv(65536)
    if not b: break
    out += b
head, body = out.decode().split("\r\n\r\n", 1)
cl = [int(l.split(":")[1]) for l in head.split("\r\n") if l.lower().startswith("content-length:")]
print(head.split("\r\n")[0], "length-ok" if cl == [len(body.encode())] else "length %s for %d bytes" % (cl, len(body)),
      json.loads(body)["error"]["message"])
PY
)
expect_eq "over the connection limit: 503, exact length, error.message" "$out" \
  "HTTP/1.1 503 Service Unavailable length-ok too many connections from this address, retry later"

# the answer's framing: Date, Content-Length, JSON
out=$(curl -s -D - -o /dev/null "$GPUAAS_SERVER/api/v1/workloads" -H "Authorization: Bearer $GPUAAS_TOKEN" | tr -d '\r')
expect_match "answers carry Date" "$out" $'\nDate: [A-Z][a-z]{2}, [0-9]{2} '
expect_match "answers carry Content-Length" "$out" $'\nContent-Length: [0-9]+'
# many keep-alive requests on one connection (curl reuses it)
n=$(curl -s -o /dev/null -w '%{http_code}\n' "$GPUAAS_SERVER/healthz" "$GPUAAS_SERVER/healthz" "$GPUAAS_SERVER/healthz" | grep -c 200)
expect_eq "curl reuses the connection" "$n" 3

check "daemon still running" kill -0 "$DAEMON_PID"
finish
