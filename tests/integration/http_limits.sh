#!/usr/bin/env bash
# The HTTP server's connection limits (limits.maxConnections, limits.maxConnectionsPerAddress;
# src/net/http.c): one client address holding thousands of sockets must not lock the others
# out. Clients come from different loopback addresses (all of 127.0.0.0/8 is loopback on
# Linux) through python3, so that the sockets held, the bytes sent and what comes back
# (a 503 with Retry-After, a close) are exactly the test's.
source "$(dirname "$0")/lib.sh"
MAX_BODY=65536

# conns SCENARIO: run the python scenario against $PORT; prints "key value" lines
conns() {
  python3 - "$PORT" "$1" <<'PY'
import resource, select, socket, sys, time
port, scenario = int(sys.argv[1]), sys.argv[2]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

def connect(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s

def read_answer(s, timeout=3.0):
    """One HTTP answer (head and Content-Length body): (status, head, body); status 0 for a
    close or reset before any answer."""
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            b = s.recv(65536)
            if not b: return 0, "", ""
            buf += b
        head, body = buf.split(b"\r\n\r\n", 1)
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length": n = int(v)
        while len(body) < n:
            b = s.recv(65536)
            if not b: break
            body += b
        return int(head.split()[1]), head.decode("latin-1"), body.decode("latin-1")
    except (ConnectionResetError, socket.timeout):
        return 0, "", ""

def closed(s, timeout=2.0):
    """Whether the server closed s (an end of file or a reset within timeout)."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def readable(socks, timeout):
    """The sockets of socks with something to read (poll: descriptors past 1024)."""
    p, by_fd = select.poll(), {}
    for s in socks:
        p.register(s, select.POLLIN)
        by_fd[s.fileno()] = s
    return [by_fd[fd] for fd, _ in p.poll(timeout * 1000)]

def get(s, close=False):
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + (b"Connection: close\r\n" if close else b"") + b"\r\n")
    return read_answer(s)[0]

def once(src):
    """A fresh client from src: the status of one GET /healthz (0: no answer)."""
    try:
        s = connect(src)
    except OSError:
        return 0
    st = get(s, close=True)
    s.close()
    return st

def flood(src, n, expect_refused, wait=10.0):
    """Open n sockets from src without sending anything; collect the 503s the server sends
    (until expect_refused arrived or wait passed). Returns (held, refused answers, the
    longest a refusal took in ms)."""
    socks, opened = [], {}
    for _ in range(n):
        s = connect(src)
        opened[s] = time.monotonic()
        socks.append(s)
    refused, slowest, left = [], 0.0, set(socks)
    deadline = time.monotonic() + wait
    while len(refused) < expect_refused and time.monotonic() < deadline:
        for s in readable(left, 0.2):
            st, head, body = read_answer(s, 1.0)
            left.discard(s)
            refused.append((st, head, body))
            slowest = max(slowest, time.monotonic() - opened[s])
    # the held ones: still open, nothing sent to them
    for s in readable(left, 0.3):
        left.discard(s)
        refused.append(read_answer(s, 1.0))
    held = [s for s in socks if s in left]
    return held, refused, int(slowest * 1000)

def report(key, value): print(key, value, flush=True)

def summary(prefix, held, refused, ms):
    report(prefix + "_held", len(held))
    report(prefix + "_refused", len(refused))
    report(prefix + "_statuses", ",".join(sorted({str(r[0]) for r in refused})) or "none")
    report(prefix + "_retry_after", int(all("\r\nretry-after: 1" in r[1].lower() for r in refused)))
    report(prefix + "_messages", "|".join(sorted({r[2].split('"message": "')[-1].split('"')[0] for r in refused})))
    report(prefix + "_slowest_refusal_ok", int(ms < 2000))

if scenario == "default":
    # one address with more sockets than the whole server held before (4,000)
    held, refused, ms = flood("127.0.0.1", 4100, 4100 - 256)
    summary("greedy", held, refused, ms)
    report("other", once("127.0.0.2"))
    report("greedy_held_served", get(held[0]) if held else 0)
elif scenario == "low":
    # maxConnections 120, maxConnectionsPerAddress 50
    a, refused, ms = flood("127.0.0.1", 80, 30)
    summary("a", a, refused, ms)
    report("other", once("127.0.0.2"))
    c, refused, ms = flood("127.0.0.3", 50, 0, 0)
    report("c_held", len(c))
    d, refused, ms = flood("127.0.0.4", 30, 10)
    summary("d", d, refused, ms)
    report("full_other", once("127.0.0.2"))
    # a's sockets become idle keep-alive connections, a[0] the longest idle
    report("a_served", sum(get(s) == 200 for s in a))
    # a at its limit: its new connection takes the place of a's longest idle one
    extra = connect("127.0.0.1")
    report("a_extra", get(extra))
    report("a0_closed", closed(a[0]))
    # the server full, with idle connections: someone else's new one takes the longest idle
    report("full_other_idle", once("127.0.0.2"))
    report("a1_closed", closed(a[1]))
    report("a2_open", get(a[2]))
    report("c_served", get(c[-1]))   # (not before: it would become idle, and be reclaimed)
PY
}
val() { awk -v k="$2" '$1 == k {print $2; exit}' <<<"$1"; }
valrest() { awk -v k="$2" '$1 == k {$1 = ""; sub(/^ /, ""); print; exit}' <<<"$1"; }

# --- the settings are checked, naming the field ------------------------------------------
cfg=$(write_config bad)
sed -i "s/^limits: {\(.*\)}$/limits: {\1, maxConnectionsPerAddress: 10, maxConections: 5}/" "$cfg"
out=$(timeout 5 "$GPUAAS_BIN" serve --config "$cfg" 2>&1)
expect_match "an unknown limit after known ones names its field" "$out" "limits\.maxConections: unknown limit"
sed -i "s/maxConnectionsPerAddress: 10, maxConections: 5/maxConnectionsPerAddress: 0/" "$cfg"
out=$(timeout 5 "$GPUAAS_BIN" serve --config "$cfg" 2>&1)
expect_match "maxConnectionsPerAddress 0 is refused, naming it" "$out" "limits\.maxConnectionsPerAddress: must be an integer between 1 and 65536"

# --- the defaults: 4,100 sockets from one address do not lock another out --------------
cfg=$(write_config http_limits)
start_daemon "$cfg" || { fail "daemon start"; finish; exit 1; }
PORT=${GPUAAS_SERVER##*:}
r=$(conns default)
expect_eq "the greedy address keeps its 256 (default limit)" "$(val "$r" greedy_held)" 256
expect_eq "the rest of its sockets are refused" "$(val "$r" greedy_refused)" 3844
expect_eq "refused with 503" "$(val "$r" greedy_statuses)" 503
expect_eq "refusals carry Retry-After" "$(val "$r" greedy_retry_after)" 1
expect_eq "refusals name the address limit" "$(valrest "$r" greedy_messages)" "too many connections from this address, retry later"
expect_eq "refused quickly" "$(val "$r" greedy_slowest_refusal_ok)" 1
expect_eq "another address is served meanwhile" "$(val "$r" other)" 200
expect_eq "the greedy address's held connections are served" "$(val "$r" greedy_held_served)" 200
stop_daemon

# --- lowered limits: per address, in all, and idle keep-alive connections reclaimed -----
sed -i "s/^limits: {\(.*\)}$/limits: {\1, maxConnections: 120, maxConnectionsPerAddress: 50}/" "$cfg"
start_daemon "$cfg" || { fail "daemon start (lowered limits)"; finish; exit 1; }
PORT=${GPUAAS_SERVER##*:}
r=$(conns low)
expect_eq "A keeps maxConnectionsPerAddress (50)" "$(val "$r" a_held)" 50
expect_eq "A's other 30 refused with 503" "$(val "$r" a_refused)/$(val "$r" a_statuses)" "30/503"
expect_eq "A's refusals carry Retry-After" "$(val "$r" a_retry_after)" 1
expect_eq "B is served while A is at its limit" "$(val "$r" other)" 200
expect_eq "C holds 50 too" "$(val "$r" c_held)" 50
expect_eq "D gets what is left of maxConnections (120)" "$(val "$r" d_held)/$(val "$r" d_refused)" "20/10"
expect_eq "D's refusals name the server's limit" "$(valrest "$r" d_messages)" "too many connections, retry later"
expect_eq "a full server with nothing idle refuses B" "$(val "$r" full_other)" 503
expect_eq "A's 50 connections answer one request each" "$(val "$r" a_served)" 50
expect_eq "A at its limit: a new connection takes an idle one's place" "$(val "$r" a_extra)" 200
expect_eq "the longest idle connection of A was the one closed" "$(val "$r" a0_closed)" True
expect_eq "a full server: B takes the longest idle connection's place" "$(val "$r" full_other_idle)" 200
expect_eq "that was A's next longest idle one" "$(val "$r" a1_closed)" True
expect_eq "A's other idle connections stay open" "$(val "$r" a2_open)" 200
expect_eq "C's connections are served" "$(val "$r" c_served)" 200
check "the daemon is still serving" curl -sf "$GPUAAS_SERVER/healthz"

finish
