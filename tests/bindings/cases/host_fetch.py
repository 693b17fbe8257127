"""Fetches a data-plane URL from the host, the way a browser or curl
would: only the URL, no routing headers, no token. Used by
test_host_routing.lua through io.popen.

  host_fetch.py FILE   FILE: line 1 the URL, line 2 the method, then the
                       body (POST: sent as multipart/form-data "file")
Prints "<status>\\n<body>". A host name under .localhost connects to
127.0.0.1 (as curl does) with the Host header kept."""
import http.client
import sys
import urllib.parse


def main():
    with open(sys.argv[1], "rb") as f:
        url, method, body = f.read().split(b"\n", 2)
    if method not in (b"GET", b"POST"):
        sys.exit("method must be GET or POST, not %r" % method)
    u = urllib.parse.urlsplit(url.decode())
    host = u.hostname or ""
    if not (host == "localhost" or host.endswith(".localhost") or host == "127.0.0.1"):
        sys.exit("refusing a non-loopback host: %s" % host)
    conn = http.client.HTTPConnection("127.0.0.1", u.port or 80, timeout=30)
    target = u.path + ("?" + u.query if u.query else "")
    headers = {"Host": u.netloc}
    data = None
    if method == b"POST":
        boundary = "abxhostfetchboundary"
        data = (b"--" + boundary.encode() + b"\r\n"
                b'Content-Disposition: form-data; name="file"; filename="f"\r\n'
                b"Content-Type: application/octet-stream\r\n\r\n" + body +
                b"\r\n--" + boundary.encode() + b"--\r\n")
        headers["Content-Type"] = "multipart/form-data; boundary=" + boundary
    conn.request(method.decode(), target, body=data, headers=headers)
    r = conn.getresponse()
    sys.stdout.buffer.write(b"%d\n" % r.status + r.read())


if __name__ == "__main__":
    main()
