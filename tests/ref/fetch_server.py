#!/usr/bin/python3
"""A stand-in for the Hugging Face hub on 127.0.0.1, for tests/t-fetch.sh.

usage: fetch_server.py ROOT PORTFILE [LOG]
Serves GET/HEAD of /REPO/resolve/COMMIT/FILE from ROOT/FILE (the repository and commit are
ignored) on a free port, which it writes to PORTFILE. Like the hub, a HEAD answers with
X-Linked-Etag (the file's SHA-256) and X-Linked-Size for files named *.safetensors or *.bin (LFS
objects), and with ETag (the git blob SHA-1) for the others. GET honours "Range: bytes=N-".
Fixtures by name:
  trunc-*   the first GET without a Range header announces the whole length, sends half and
            closes the connection (a truncated transfer); later requests are served normally.
  ROOT/FILE absent: 404.
LOG, if given, gets one line per request: METHOD PATH RANGE."""
import hashlib, http.server, os, re, sys

ROOT, PORTFILE = sys.argv[1], sys.argv[2]
LOG = sys.argv[3] if len(sys.argv) > 3 else None
truncated_once = set()


class Hub(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def file(self):
        m = re.match(r"^/[^/]+/[^/]+/resolve/[0-9a-f]{40}/(.+)$", self.path)
        p = os.path.join(ROOT, m.group(1)) if m else None
        return p if p and os.path.isfile(p) else None

    def log(self):
        if LOG:
            with open(LOG, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')}\n")

    def head_lines(self, p, length):
        data = open(p, "rb").read()
        if p.endswith((".safetensors", ".bin")):
            self.send_header("X-Linked-Etag", '"%s"' % hashlib.sha256(data).hexdigest())
            self.send_header("X-Linked-Size", str(len(data)))
        else:
            blob = b"blob %d\0" % len(data) + data
            self.send_header("ETag", '"%s"' % hashlib.sha1(blob).hexdigest())
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return data

    def do_HEAD(self):
        self.log()
        p = self.file()
        if not p:
            self.send_error(404)
            return
        self.send_response(200)
        self.head_lines(p, os.path.getsize(p))

    def do_GET(self):
        self.log()
        p = self.file()
        if not p:
            self.send_error(404)
            return
        size = os.path.getsize(p)
        rng = re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))
        start = int(rng.group(1)) if rng else 0
        if start >= size and size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if rng:
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        else:
            self.send_response(200)
        data = self.head_lines(p, size - start)[start:]
        if os.path.basename(p).startswith("trunc-") and not rng and p not in truncated_once:
            truncated_once.add(p)
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.replace(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
