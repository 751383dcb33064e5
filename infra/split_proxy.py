"""Sends the requests that hold a stream to one server and every other
request to another, streaming each answer back as it arrives. With two
server processes sharing the emulator's table:
- `subscriptions/listen` goes to the first, so the conformance suite's
  trigger calls are always served by the process that does not hold the
  stream;
- a 2025-era client's calls (`tools/call`, `prompts/get`,
  `resources/read`, without the 2026 `Mcp-Method` header) go to the first
  too, and its `initialize` and its answers to the server's own requests
  to the second: the session is minted by one process and opened by the
  other, and every answer crosses to the process holding the call.

    python infra/split_proxy.py PORT LISTEN_URL OTHER_URL

Each request's method and where it went is printed on stderr.
"""

import http.client
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LEGACY_CALLS = {"tools/call", "prompts/get", "resources/read"}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Split(BaseHTTPRequestHandler):
    # HTTP/1.0 replies end when the connection closes, so a streamed
    # answer passes through without re-framing.
    protocol_version = "HTTP/1.0"
    listen = other = None

    def forward(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        modern = self.headers.get("mcp-method")
        try:
            message = json.loads(body) if body else {}
        except ValueError:
            message = {}
        message = message if isinstance(message, dict) else {}
        method = modern or message.get("method") or ("answer" if "result" in message or "error" in message else "")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        name = self.headers.get("mcp-name") or params.get("name") or params.get("uri") or ""
        holds = method == "subscriptions/listen" or (not modern and method in LEGACY_CALLS)
        target = self.listen if holds else self.other
        print(f"split-proxy: {self.command} {method or '-'} {name} -> {target.port}", file=sys.stderr, flush=True)
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
