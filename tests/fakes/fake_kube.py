#!/usr/bin/env python3
"""fake_kube: a stand-in kube-apiserver for the fleet status read-back's tests.

A real kube-apiserver (with etcd, Kueue's CRDs and controllers) cannot be installed on
these machines, so the tests talk to this fake instead. It speaks the real protocol for
the four resources gpuaas reads (kueue.x-k8s.io workloads, clusterqueues, localqueues;
batch/v1 jobs), as kube-apiserver does:

  - LIST  GET /apis/<group>/<version>/<plural>?limit=N&continue=TOKEN: a List with
          metadata.resourceVersion and metadata.continue; an expired token is 410 Gone;
  - WATCH GET ...?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=S:
          200 with a chunked body of newline-separated {type, object} events (ADDED,
          MODIFIED, DELETED, BOOKMARK), each line split across two chunks on purpose; a
          resourceVersion older than the last compaction gets the ERROR event with a
          410 Status (as kube-apiserver sends "too old resource version");
  - auth: "Authorization: Bearer TOKEN" (--token), or a TLS client certificate signed by
          --client-ca; 401 with a Status body otherwise.

Control API for tests (no auth), all POST with a JSON body:
  /_control/put {resource, object}            create or replace (resourceVersion set)
  /_control/delete {resource, namespace, name}
  /_control/compact {}                        watches from an older version get 410
  /_control/break-watches {}                  drop every open watch without ending it
  /_control/hold-watches {} / release-watches {}  new watches wait (to change state
                                              while the client is disconnected)
  GET /_control/stats -> {lists, watches, open}

Prints the port it listens on (first line of stdout). python3 standard library only.
"""
import argparse
import base64
import json
import socketserver
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

RESOURCES = {
    "workloads": ("kueue.x-k8s.io", "Workload"),
    "clusterqueues": ("kueue.x-k8s.io", "ClusterQueue"),
    "localqueues": ("kueue.x-k8s.io", "LocalQueue"),
    "jobs": ("batch", "Job"),
}


class State:
    def __init__(self, versions):
        self.lock = threading.Condition()
        self.rv = 100
        self.objects = {r: {} for r in RESOURCES}
        self.history = []          # (rv, resource, type, object)
        self.compacted = 0
        self.break_gen = 0
        self.hold = False
        self.versions = versions   # the kueue versions served
        self.stats = {"lists": 0, "watches": 0, "open": 0}


def key_of(obj):
    md = obj.get("metadata", {})
    return (md.get("namespace", ""), md["name"])


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None
    args = None

    def log_message(self, fmt, *a):
        pass

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # ---- control ------------------------------------------------------------------

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        st = self.state
        path = urlparse(self.path).path
        with st.lock:
            if path == "/_control/put":
                res, obj = body["resource"], body["object"]
                st.rv += 1
                md = obj.setdefault("metadata", {})
                md["resourceVersion"] = str(st.rv)
                md.setdefault("uid", str(uuid.uuid4()))
                md.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                k = key_of(obj)
                typ = "MODIFIED" if k in st.objects[res] else "ADDED"
                st.objects[res][k] = obj
                st.history.append((st.rv, res, typ, obj))
            elif path == "/_control/delete":
                res = body["resource"]
                k = (body.get("namespace", ""), body["name"])
                obj = st.objects[res].pop(k, None)
                if obj is None:
                    return self.send_json(404, status(404, "NotFound", "no such object"))
                st.rv += 1
                obj = json.loads(json.dumps(obj))
                obj["metadata"]["resourceVersion"] = str(st.rv)
                st.history.append((st.rv, res, "DELETED", obj))
            elif path == "/_control/compact":
                st.compacted = st.rv
                st.history = []
            elif path == "/_control/break-watches":
                st.break_gen += 1
            elif path == "/_control/hold-watches":
                st.hold = True
            elif path == "/_control/release-watches":
                st.hold = False
            else:
                return self.send_json(404, status(404, "NotFound", "unknown control"))
            st.lock.notify_all()
            rv = st.rv
        self.send_json(200, {"resourceVersion": str(rv)})

    # ---- the API ------------------------------------------------------------------

    def authorized(self):
        if self.args.token is not None:
            return self.headers.get("Authorization") == "Bearer " + self.args.token
        if self.args.client_ca:
            return bool(self.connection.getpeercert())
        return True

    def do_GET(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/_control/stats":
            with self.state.lock:
                return self.send_json(200, dict(self.state.stats))
        if not self.authorized():
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        parts = u.path.strip("/").split("/")
        # apis/<group>/<version>/<plural>
        if len(parts) != 4 or parts[0] != "apis" or parts[3] not in RESOURCES:
            return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
        group, version, res = parts[1], parts[2], parts[3]
        want_group = RESOURCES[res][0]
        ok_version = version == "v1" if want_group == "batch" else version in self.state.versions
        if group != want_group or not ok_version:
            return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
        if q.get("watch") in ("1", "true"):
            return self.watch(res, group + "/" + version, q)
        return self.list(res, group + "/" + version, q)

    def list(self, res, api_version, q):
        st = self.state
        limit = int(q.get("limit", "0") or 0)
        with st.lock:
            st.stats["lists"] += 1
            start, rv = 0, st.rv
            if q.get("continue"):
                tok = json.loads(base64.b64decode(q["continue"]))
                if tok["rv"] < st.compacted:
                    return self.send_json(410, status(410, "Expired", "The provided continue parameter is too old"))
                start, rv = tok["start"], tok["rv"]
            items = [st.objects[res][k] for k in sorted(st.objects[res])]
        page = items[start:start + limit] if limit else items[start:]
        meta = {"resourceVersion": str(rv)}
        if limit and start + limit < len(items):
            meta["continue"] = base64.b64encode(json.dumps({"rv": rv, "start": start + limit}).encode()).decode()
        self.send_json(200, {"kind": RESOURCES[res][1] + "List", "apiVersion": api_version, "metadata": meta,
                             "items": page})

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def send_line(self, ev):
        line = json.dumps(ev).encode() + b"\n"
        half = len(line) // 2            # one event over two chunks: the client must buffer
        self.chunk(line[:half])
        self.chunk(line[half:])

    def watch(self, res, api_version, q):
        st = self.state
        from_rv = int(q.get("resourceVersion") or 0)
        timeout = min(float(q.get("timeoutSeconds") or 1800), self.args.watch_timeout)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        with st.lock:
            st.stats["watches"] += 1
            while st.hold:
                st.lock.wait()
            gen = st.break_gen
            expired = from_rv < st.compacted
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if expired:
            self.send_line({"type": "ERROR", "object": status(
                410, "Expired", "too old resource version: %d (%d)" % (from_rv, st.compacted))})
            self.chunk(b"")
            return
        sent = from_rv
        deadline = time.monotonic() + timeout
        next_bm = time.monotonic() + self.args.bookmark_interval
        with st.lock:
            st.stats["open"] += 1
        try:
            while True:
                with st.lock:
                    out = [h for h in st.history if h[1] == res and h[0] > sent]
                    now = time.monotonic()
                    if not out and st.break_gen == gen and now < deadline and now < next_bm:
                        st.lock.wait(min(deadline, next_bm) - now)
                        continue
                    broken = st.break_gen != gen
                    cur = st.rv
                if broken:             # no terminating chunk: the client sees a cut body
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                for h in out:
                    self.send_line({"type": h[2], "object": h[3]})
                    sent = h[0]
                if time.monotonic() >= deadline:
                    self.chunk(b"")    # timeoutSeconds: the watch ends normally
                    return
                if time.monotonic() >= next_bm:
                    next_bm = time.monotonic() + self.args.bookmark_interval
                    if bookmarks:
                        self.send_line({"type": "BOOKMARK", "object": {
                            "kind": RESOURCES[res][1], "apiVersion": api_version,
                            "metadata": {"resourceVersion": str(cur)}}})
                        sent = max(sent, cur)
        except OSError:
            self.close_connection = True
        finally:
            with st.lock:
                st.stats["open"] -= 1


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca")
    ap.add_argument("--kueue-versions", default="v1beta2,v1beta1")
    ap.add_argument("--watch-timeout", type=float, default=1800.0)
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    args = ap.parse_args()
    Handler.state = State(args.kueue_versions.split(","))
    Handler.args = args
    srv = Server(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_OPTIONAL
            ctx.load_verify_locations(args.client_ca)
        # the handshake happens in each request's thread (on its first read), never in
        # accept(): a client slow to shake hands must not stop the others
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
