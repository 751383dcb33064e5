"""Instructions per request, counted by valgrind's callgrind: repeatable on
a shared, noisy machine where CPU time per request is not. Each server is
run twice under callgrind, serving N and N + 1000 sequential `tools/call`
echo requests on one keep-alive connection; the difference over 1,000 is
the per-request count, start-up excluded.

    python3 instructions_bench.py NAME=COMMAND [NAME=COMMAND ...]

COMMAND may contain {port}; the server also gets PORT in its environment.
The first server is compared with each of the others.
"""

import glob
import http.client
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import tool_call  # infra/tool_call.py, beside this script

PORT = 39395
BODY = tool_call.body("echo", {"text": "hello"})
HEADERS = tool_call.headers("echo")


def connect():
    for _ in range(600):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            connection.request("POST", "/mcp", body=BODY, headers=HEADERS)
            connection.getresponse().read()
            return connection
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server under callgrind never answered")


def instructions(command, requests, out_dir):
    out = os.path.join(out_dir, "callgrind.%d" % requests)
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + shlex.split(command.format(port=PORT))
    server = subprocess.Popen(argv, env=dict(os.environ, PORT=str(PORT)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        connection = connect()
        for _ in range(requests):
            connection.request("POST", "/mcp", body=BODY, headers=HEADERS)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    total = 0
    for path in glob.glob(out + "*"):  # one file per process
        with open(path) as counts:
            for line in counts:
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
    return total


def main():
    servers = [arg.split("=", 1) for arg in sys.argv[1:]]
    per_request = {}
    for name, command in servers:
        with tempfile.TemporaryDirectory() as out_dir:
            base = instructions(command, 200, out_dir)
            more = instructions(command, 1200, out_dir)
        per_request[name] = (more - base) / 1000
        print("instructions per tools/call (callgrind), %s: %.0f" % (name, per_request[name]))
    first = servers[0][0]
    for name, _ in servers[1:]:
        print("  %s / %s: %.3fx" % (first, name, per_request[first] / per_request[name]))


if __name__ == "__main__":
    main()
