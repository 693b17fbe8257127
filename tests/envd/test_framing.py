"""abx-envd's own HTTP front frames requests as strictly as abx-local's
(abx-local/common/framing.h): a request that two parsers could read two
ways gets one 400 and its connection is closed, so a request hidden in its
body is never served. A process inside the sandbox reaches envd on its
port without the data-plane proxy (which re-frames), so this is envd's
own line of defence."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from envdlib import Envd  # noqa: E402
from abxtest import check, done, raw_http  # noqa: E402

# A request hidden in the body: served only if envd read the first
# request's framing one way and a proxy the other.
HIDDEN = "GET /envs HTTP/1.1\r\nHost: envd\r\n\r\n"
CASES = [
    ("Content-Length with Transfer-Encoding",
     "Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % (5 + len(HIDDEN)),
     "0\r\n\r\n" + HIDDEN),
    ("two Transfer-Encodings", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
     "0\r\n\r\n" + HIDDEN),
    ("two Content-Lengths", "Content-Length: 0\r\nContent-Length: 0\r\n", HIDDEN),
    ("Transfer-Encoding other than chunked", "Transfer-Encoding: gzip, chunked\r\n",
     "0\r\n\r\n" + HIDDEN),
    ("Transfer-Encoding identity", "Transfer-Encoding: identity\r\n", HIDDEN),
]


with Envd(sys.argv[1]) as e:
    addr = "127.0.0.1:%d" % e.port
    for path in ("/health", "/files?path=/tmp/x&username=root",
                 "/process.Process/List"):
        for name, headers, body in CASES:
            req = "POST %s HTTP/1.1\r\nHost: envd\r\n%s\r\n%s" % (path, headers, body)
            got, closed = raw_http(addr, req.encode())
            check(got.startswith(b"HTTP/1.1 400") and got.count(b"HTTP/1.") == 1 and closed,
                  "%s %s: one 400, connection closed (%r)" % (path.split("?")[0], name, got[:80]))
    # Sound framing still works: chunked alone, Content-Length alone.
    got, _ = raw_http(addr, b"POST /health HTTP/1.1\r\nHost: envd\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", wait=1.0)
    check(got.startswith(b"HTTP/1.1 405") or got.startswith(b"HTTP/1.1 2"),
          "a chunked request is taken (%r)" % got[:40])
    got, _ = raw_http(addr, b"GET /health HTTP/1.1\r\nHost: envd\r\nContent-Length: 0\r\n\r\n",
                      wait=1.0)
    check(got.startswith(b"HTTP/1.1 204"), "a Content-Length request is taken (%r)" % got[:40])
done()
