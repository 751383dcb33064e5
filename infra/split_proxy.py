"""Sends `subscriptions/listen` to one server and every other request to
another, streaming each answer back as it arrives: with two server
processes sharing the emulator's table, the conformance suite's trigger
calls are then always served by the process that does not hold the
stream.

    python infra/split_proxy.py PORT LISTEN_URL OTHER_URL

Each request's method and where it went is printed on stderr.
"""

import http.client
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Split(BaseHTTPRequestHandler):
    # HTTP/1.0 replies end when the connection closes, so a streamed
    # answer passes through without re-framing.
    protocol_version = "HTTP/1.0"
    listen = other = None

    def forward(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        method = self.headers.get("mcp-method", "")
        target = self.listen if method == "subscriptions/listen" else self.other
        print(f"split-proxy: {self.command} {method or '-'} {self.headers.get('mcp-name', '')} -> {target.port}",
              file=sys.stderr, flush=True)
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Host"] = f"{target.hostname}:{target.port}"
        upstream.request(self.command, target.path or "/mcp", body=body, headers=headers)
        response = upstream.getresponse()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.end_headers()
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            self.wfile.write(chunk)
            self.wfile.flush()
        upstream.close()

    do_POST = do_GET = do_DELETE = forward

    def log_message(self, *args):
        pass


def main():
    port, listen, other = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2]), urllib.parse.urlsplit(sys.argv[3])
    Split.listen, Split.other = listen, other
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", port), Split).serve_forever()


if __name__ == "__main__":
    main()
