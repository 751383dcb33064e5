"""A stand-in Lambda Runtime API on loopback, for the benches that run a
function binary as Lambda would (`AWS_LAMBDA_RUNTIME_API`): it hands out
queued events on `GET .../invocation/next` and takes answers, whole or
streamed, on `POST .../response`, timing each (perf_counter seconds).

A streamed answer (`Lambda-Runtime-Function-Response-Mode: streaming`) is
the JSON prelude, eight NUL bytes and the body, chunked; `answers` holds the
body after the prelude either way. `first_event` is when the last answer's
first server-sent event had fully arrived (its end for a whole answer): what
a client of a stream that stays open waits for.
"""

import http.server
import json
import queue
import socket
import threading
import time


class RuntimeApi:
    """One function process at a time: `push` events, then `answer()` waits
    for the next answer. `polls` records when each `next` poll arrived
    (the first one ends the function's Init)."""

    def __init__(self, port=0, deadline_ms=25_000):
        self.events = queue.Queue()
        self.answers = queue.Queue()
        self.polls = []
        self.first_event = None
        self.deadline_ms = deadline_ms
        self.server = _Server(("127.0.0.1", port), _handler(self))
        self.address = f"127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def push(self, body):
        """Queues one event (a dict, or its JSON bytes)."""
        self.events.put(body if isinstance(body, bytes) else json.dumps(body).encode())

    def answer(self, timeout=60):
        """(started, finished, status code, body bytes) of the next answer;
        raises queue.Empty if none arrives in time."""
        return self.answers.get(timeout=timeout)

    def reset(self):
        """Forgets polls and anything queued (between function processes)."""
        self.polls = []
        for pending in (self.events, self.answers):
            while not pending.empty():
                pending.get_nowait()

    def close(self):
        self.server.shutdown()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A killed function drops its pending long poll: expected here.
        pass


def _handler(api):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            # Requests and answers go out in more than one write: without
            # these, Nagle and delayed ACKs add 40 ms to some exchanges,
            # which the real Runtime API does not.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def handle_one_request(self):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            super().handle_one_request()

        def read(self, size):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            return self.rfile.read(size)

        def do_GET(self):
            api.polls.append(time.perf_counter())
            try:
                # As the real API does, the poll waits for an event; a
                # function killed meanwhile leaves it to time out.
                event = api.events.get(timeout=30)
            except queue.Empty:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Lambda-Runtime-Aws-Request-Id", "bench")
            self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + api.deadline_ms))
            self.send_header("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:bench")
            self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
            self.send_header("Content-Length", str(len(event)))
            self.end_headers()
            self.wfile.write(event)

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return self.read(int(self.headers.get("Content-Length", 0)))
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # Trailers (a streamed error is reported in them) end
                    # with a blank line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.read(size)
                self.rfile.readline()
                if api.first_event is None and b"\n\n" in body.partition(b"\0" * 8)[2]:
                    api.first_event = time.perf_counter()

        def do_POST(self):
            # An answer counts from its first bytes: the runtime client
            # writes headers and body apart.
            started = time.perf_counter()
            api.first_event = None
            body = self.body()
            finished = time.perf_counter()
            if api.first_event is None:
                api.first_event = finished
            status = 200
            if self.headers.get("Lambda-Runtime-Function-Response-Mode", "").lower() == "streaming":
                prelude, _, body = body.partition(b"\0" * 8)
                status = json.loads(prelude or b"{}").get("statusCode", 200)
            elif self.path.endswith("/response"):
                whole = json.loads(body)
                status, body = whole.get("statusCode", 200), (whole.get("body") or "").encode()
            else:
                status = 500
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            api.answers.put((started, finished, status, body))

    return Handler
