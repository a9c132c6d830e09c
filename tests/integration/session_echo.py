# A stand-in for an interactive session's web app (a notebook server), run as a pod by
# portal_session_proxy.sh and authz_matrix.sh: on 127.0.0.1:PORT it answers any method
# with what it received (method, target, the cookies, CSRF token, Authorization and
# X-Forwarded-Prefix headers, the body), and echoes WebSocket text frames after an
# upgrade. Python's standard library has no WebSocket server: this is the small part of
# RFC 6455 the test needs (short frames). Usage: python3 - PORT < session_echo.py
import base64, hashlib, socket, sys, threading

port = int(sys.argv[1])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
print("ready: session echo on port %d" % port, flush=True)


def recvn(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            raise EOFError
        b += x
    return b


def websocket(c, key):
    acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: %s\r\n\r\n" % acc).encode())
    while True:
        b0, b1 = recvn(c, 2)
        n = b1 & 127
        if n == 126:
            n = int.from_bytes(recvn(c, 2), "big")
        elif n == 127:
            n = int.from_bytes(recvn(c, 8), "big")
        mask = recvn(c, 4) if b1 & 128 else b"\0\0\0\0"
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(recvn(c, n)))
        if b0 & 15 == 8:
            c.sendall(b"\x88\x00")
            return
        c.sendall(bytes([0x81, len(data)]) + data)


def serve(c):
    try:
        h = b""
        while b"\r\n\r\n" not in h:
            x = c.recv(4096)
            if not x:
                return
            h += x
        head, _, body = h.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        hd = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hd[k.strip().lower()] = v.strip()
        if hd.get("upgrade", "").lower() == "websocket":
            websocket(c, hd.get("sec-websocket-key", ""))
            return
        n = int(hd.get("content-length", "0"))
        while len(body) < n:
            x = c.recv(4096)
            if not x:
                break
            body += x
        method, target = lines[0].split()[0:2]
        out = ("method=%s\ntarget=%s\ncookie=%s\ncsrf=%s\nauth=%s\nprefix=%s\nbody=%s\n" % (
            method, target, hd.get("cookie", ""), hd.get("x-csrf-token", ""), hd.get("authorization", ""),
            hd.get("x-forwarded-prefix", ""), body.decode("latin-1"))).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nServer: session-echo\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(out) + out)
    except Exception:
        pass
    finally:
        c.close()


while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
