"""abx-local: bad requests of every kind get documented errors and never
crash the server (control plane and data plane)."""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxlocal import run_with_server  # noqa: E402
from abxtest import check, err_shape  # noqa: E402


def raw(addr, data, timeout=10):
    """Sends raw bytes, returns the status code of the answer (or None)."""
    host, port = addr.split(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass   # the server may answer and close before reading it all
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
    if not got.startswith(b"HTTP/1."):
        return None
    return int(got.split(b" ", 2)[1])


def run(s):
    P = "/sandboxes"
    cases = [
        ("malformed JSON", "{\"templateID\": ", 400),
        ("JSON array body", "[1,2]", 400),
        ("JSON string body", "\"base\"", 400),
        ("empty body", "", 400),
        ("missing templateID", "{\"timeout\": 10}", 400),
        ("templateID null", "{\"templateID\": null}", 400),
        ("templateID number", "{\"templateID\": 5}", 400),
        ("templateID empty", "{\"templateID\": \"\"}", 400),
        ("timeout string", "{\"templateID\":\"base\",\"timeout\":\"10\"}", 400),
        ("timeout float", "{\"templateID\":\"base\",\"timeout\":1.5}", 400),
        ("timeout zero", "{\"templateID\":\"base\",\"timeout\":0}", 400),
        ("timeout negative", "{\"templateID\":\"base\",\"timeout\":-5}", 400),
        ("timeout huge", "{\"templateID\":\"base\",\"timeout\":99999999999}", 400),
        ("secure string", "{\"templateID\":\"base\",\"secure\":\"yes\"}", 400),
        ("metadata array", "{\"templateID\":\"base\",\"metadata\":[1]}", 400),
        ("metadata value number", "{\"templateID\":\"base\",\"metadata\":{\"a\":1}}", 400),
        ("envVars value object", "{\"templateID\":\"base\",\"envVars\":{\"a\":{}}}", 400),
        ("template path traversal", "{\"templateID\":\"../etc\"}", 404),
    ]
    for name, body, want in cases:
        st, js, _, _ = s.request("POST", P, raw=body)
        check(err_shape(st, js, want), "%s -> %d (got %d)" % (name, want, st))

    st, js, _, _ = s.request("POST", P, raw="{\"templateID\":\"base\",\"timeout\":30,"
                             "\"unknownField\":{\"x\":[1,2]},\"autoPause\":false}")
    check(st == 201, "unknown fields are ignored (201)")
    if st == 201:
        s.kill(js["sandboxID"])

    big = "{\"templateID\":\"base\",\"metadata\":{\"a\":\"" + "x" * (2 * 1024 * 1024) + "\"}}"
    st, js, _, _ = s.request("POST", P, raw=big)
    check(err_shape(st, js, 413), "2 MiB body -> 413")
    # chunked body over the cap (no Content-Length up front)
    host, port = s.api.split(":")
    chunk = b"x" * 65536
    req = (b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + s.key.encode() +
           b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
           (b"10000\r\n" + chunk + b"\r\n") * 20 + b"0\r\n\r\n")
    check(raw(s.api, req) == 413, "chunked body over the cap -> 413")
    req = (b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + s.key.encode() +
           b"\r\nContent-Length: 99999999999\r\nConnection: close\r\n\r\n" + b"x" * 1000)
    check(raw(s.api, req) in (413, None), "absurd Content-Length -> 413 at once")

    st, js, _, _ = s.request("GET", "/no/such/route")
    check(err_shape(st, js, 404), "unknown route -> 404")
    st, js, _, _ = s.request("GET", "/sandboxes/abc/bogus")
    check(err_shape(st, js, 404), "unknown sub-route -> 404")
    st, js, h, _ = s.request("PUT", "/sandboxes")
    check(err_shape(st, js, 405) and "GET" in h.get("allow", ""), "PUT /sandboxes -> 405 + Allow")
    st, js, _, _ = s.request("PATCH", "/sandboxes/aaaaaaaaaaaaaaaaaaaa")
    check(err_shape(st, js, 405), "PATCH /sandboxes/{id} -> 405")
    st, js, _, _ = s.request("GET", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/pause")
    check(err_shape(st, js, 405), "GET .../pause -> 405")
    st, js, _, _ = s.request("DELETE", "/health", key=False)
    check(err_shape(st, js, 405), "DELETE /health -> 405")
    st, js, _, _ = s.request("BREW", "/sandboxes")
    check(st in (400, 405, 501), "unknown method BREW -> 4xx/501 (got %s)" % st)
    st, js, _, _ = s.request("POST", "/sandboxes/aaaaaaaaaaaaaaaaaaaa/timeout", raw="{nope")
    check(st in (400, 404), "malformed JSON on timeout -> 400/404")
    st, js, _, _ = s.request("GET", "/sandboxes/metrics?sandbox_ids=" + ",".join(["a"] * 101))
    check(err_shape(st, js, 400), "over 100 sandbox_ids -> 400")
    st, js, _, _ = s.request("GET", "/v2/sandboxes?metadata=%ZZ")
    check(err_shape(st, js, 400), "bad percent escape -> 400")

    # garbage on the wire, both listeners
    for addr in (s.api, s.data):
        check(raw(addr, b"\x00\x01\x02garbage\r\n\r\n") in (None, 400),
              "binary garbage answered with 400 or closed (%s)" % addr)
        check(raw(addr, b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 600000 + b"\r\n\r\n")
              in (None, 400, 413, 431), "oversized header refused (%s)" % addr)
        check(raw(addr, b"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
              in (None, 400), "bad Content-Length refused (%s)" % addr)

    # data plane routing errors
    st, body, _ = s.data_request("aaaaaaaaaaaaaaaaaaaa", 49983, "GET", "/health")
    check(st == 502 and b"The sandbox was not found" in body, "unknown sandbox -> 502")
    c = __import__("http.client").client.HTTPConnection(s.data, timeout=10)
    c.request("GET", "/health", headers={"Host": "nonsense"})
    r = c.getresponse()
    r.read()
    check(r.status == 400, "no routing headers and bad Host -> 400")
    c.request("GET", "/health", headers={"Host": "99999-abc.localhost"})
    r = c.getresponse()
    r.read()
    check(r.status == 400, "Host with an invalid port -> 400")
    c.request("GET", "/health", headers={"E2b-Sandbox-Id": "x", "E2b-Sandbox-Port": "abc"})
    r = c.getresponse()
    r.read()
    check(r.status == 400, "E2b-Sandbox-Port not a number -> 400")
    c.close()

    st, _, _, _ = s.request("GET", "/health", key=False)
    check(st == 200 and s.proc.poll() is None, "server still alive after all of it")


if __name__ == "__main__":
    run_with_server(run)
