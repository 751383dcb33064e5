"""The function in Lambda mode, fed by a stand-in Lambda Runtime API on
loopback: process start to the first event answered (median of 20 cold
starts), and the peak RSS after 1,000 events. Each event is
tests/fixtures/apigw-v2-tools-list.json turned into an `echo` call; nothing
touches AWS (the SDK is configured, as in Lambda, but not called).

usage: lambda_mode_bench.py BINARY
"""

import http.server
import json
import pathlib
import socket
import statistics
import subprocess
import sys
import threading
import time

import mcp_client  # infra/mcp_client.py, beside this script

ROOT = pathlib.Path(__file__).resolve().parents[1]
PORT = 39393
EVENT = json.loads((ROOT / "tests/fixtures/apigw-v2-tools-list.json").read_text())
EVENT["headers"]["mcp-method"] = "tools/call"
EVENT["headers"]["mcp-name"] = "echo"
EVENT["body"] = mcp_client.body("echo", {"text": "hello"}).decode()
EVENT_BYTES = json.dumps(EVENT).encode()


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    """GET .../invocation/next hands out the event; POST .../response counts."""

    protocol_version = "HTTP/1.1"
    answered = threading.Semaphore(0)
    remaining = 0
    lock = threading.Lock()
    last_answer_started = 0.0

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Requests and responses go out in more than one write: without
        # these, Nagle and delayed ACKs add 40 ms to some exchanges, which
        # the real Runtime API does not.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self):
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        super().handle_one_request()

    def read_chunk(self, size):
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        return self.rfile.read(size)

    def do_GET(self):
        with RuntimeApi.lock:
            exhausted = RuntimeApi.remaining <= 0
            RuntimeApi.remaining -= 0 if exhausted else 1
        if exhausted:
            # Slows the function's polling once its events are served. Not
            # under the lock: a killed run's last poll held it here for
            # 50 ms and delayed the next run's first event by as much.
            time.sleep(0.05)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Lambda-Runtime-Aws-Request-Id", "bench")
        self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 25_000))
        self.send_header("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:bench")
        self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
        self.send_header("Content-Length", str(len(EVENT_BYTES)))
        self.end_headers()
        self.wfile.write(EVENT_BYTES)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.read_chunk(int(self.headers.get("Content-Length", 0)))
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return body
            body += self.read_chunk(size)
            self.rfile.readline()

    def do_POST(self):
        # The answer counts from its first bytes: the runtime client writes
        # headers and body apart, and a delayed ACK on loopback can hold the
        # body 40 ms, which says nothing about the function.
        RuntimeApi.last_answer_started = time.perf_counter()
        body = self.read_body()
        if self.path.endswith("/response"):
            answer = json.loads(body)
            assert answer["statusCode"] == 200 and "echo: hello" in answer["body"], answer
        else:
            print("runtime error reported:", body[:300], file=sys.stderr)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        RuntimeApi.answered.release()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A killed function drops its pending long poll: expected here.
        pass


def start(binary):
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{PORT}",
        "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256", "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_LAMBDA_LOG_GROUP_NAME": "bench", "AWS_REGION": "eu-west-1",
        "MCP_STATE_KEY_ID": "alias/bench", "MCP_TABLE_NAME": "bench", "MCP_AUDIENCE": "bench",
        "MCP_TASK_QUEUE_URL": "http://127.0.0.1:1/queue", "MCP_LOG_LEVEL": "warn",
    }
    return subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def serve(binary, events):
    """Starts the function, feeds `events` events; answers (seconds to the
    first answer, peak RSS in KiB)."""
    RuntimeApi.remaining = events
    began = time.perf_counter()
    process = start(binary)
    try:
        assert RuntimeApi.answered.acquire(timeout=10), "no answer"
        first = RuntimeApi.last_answer_started - began
        for _ in range(events - 1):
            assert RuntimeApi.answered.acquire(timeout=10), "no answer"
        status = pathlib.Path(f"/proc/{process.pid}/status").read_text()
        peak = int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1])
        return first, peak
    finally:
        process.kill()
        process.wait()


def main():
    binary = sys.argv[1]
    server = Server(("127.0.0.1", PORT), RuntimeApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    firsts = sorted(serve(binary, 1)[0] for _ in range(20))
    _, peak = serve(binary, 1000)
    print(f"Lambda mode, start to first event answered: median {statistics.median(firsts) * 1000:.1f} ms "
          f"(min {firsts[0] * 1000:.1f}, max {firsts[-1] * 1000:.1f}) over 20 runs")
    print(f"Lambda mode, peak RSS after 1,000 events: {peak / 1024:.1f} MiB")
    server.shutdown()


if __name__ == "__main__":
    main()
