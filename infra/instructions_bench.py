"""Instructions and heap allocations per request, counted by valgrind
(callgrind and DHAT): repeatable on a shared, noisy machine where CPU time
per request is not. Each server is run twice under each tool, serving N
and N + 1000 sequential `tools/call` echo requests on one keep-alive
connection; the difference over 1,000 is the per-request count, start-up
excluded.

    python3 instructions_bench.py NAME=COMMAND [NAME=COMMAND ...]
    python3 instructions_bench.py --eras NAME=COMMAND

COMMAND may contain {port}; the server also gets PORT in its environment.
The first server is compared with each of the others. With --eras, one
server is measured twice: as a 2026-07-28 client calls it, and as a
2025-era client does in the session its `initialize` opened (the session
opened and its state read on every call, the request served as the
modern one it means, the answer shaped back).
"""

import glob
import http.client
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import mcp_client  # infra/mcp_client.py, beside this script

PORT = 39395
BODY = mcp_client.body("echo", {"text": "hello"})
HEADERS = mcp_client.headers("echo")


LEGACY_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}})
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def connect(era):
    """A keep-alive connection, and the body and headers of each call."""
    for _ in range(600):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            if era == "modern":
                connection.request("POST", "/mcp", body=BODY, headers=HEADERS)
                connection.getresponse().read()
                return connection, BODY, HEADERS
            connection.request("POST", "/mcp", body=INITIALIZE, headers=JSON)
            response = connection.getresponse()
            response.read()
            headers = dict(JSON, **{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": response.getheader("mcp-session-id")})
            return connection, LEGACY_BODY, headers
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server under callgrind never answered")


def callgrind_total(out):
    """Instructions, summed over the processes' callgrind files."""
    total = 0
    for path in glob.glob(out + "*"):  # one file per process
        with open(path) as counts:
            for line in counts:
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
    return total


def dhat_total(out):
    """(allocations, bytes allocated), from DHAT's program points."""
    with open(out) as profile:
        points = json.load(profile)["pps"]
    return sum(point["tbk"] for point in points), sum(point["tb"] for point in points)


TOOLS = {
    "callgrind": (["--tool=callgrind", "--callgrind-out-file={out}"], callgrind_total),
    "dhat": (["--tool=dhat", "--dhat-out-file={out}"], dhat_total),
}


def count(tool, command, requests, out_dir, era):
    flags, total = TOOLS[tool]
    out = os.path.join(out_dir, "%s.%d" % (tool, requests))
    argv = ["valgrind"] + [flag.format(out=out) for flag in flags] + shlex.split(command.format(port=PORT))
    server = subprocess.Popen(argv, env=dict(os.environ, PORT=str(PORT)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        connection, body, headers = connect(era)
        for _ in range(requests):
            connection.request("POST", "/mcp", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    return total(out)


def per_request(tool, command, era="modern"):
    with tempfile.TemporaryDirectory() as out_dir:
        base = count(tool, command, 200, out_dir, era)
        more = count(tool, command, 1200, out_dir, era)
    if isinstance(base, tuple):
        return tuple((m - b) / 1000 for m, b in zip(more, base))
    return (more - base) / 1000


def main():
    args = sys.argv[1:]
    if args[:1] == ["--eras"]:
        name, command = args[1].split("=", 1)
        servers = [(name + " (2025 session)", command, "legacy"), (name + " (2026-07-28)", command, "modern")]
    else:
        servers = [arg.split("=", 1) + ["modern"] for arg in args]
    instructions, allocations = {}, {}
    for name, command, era in servers:
        instructions[name] = per_request("callgrind", command, era)
        allocations[name] = per_request("dhat", command, era)
        print("per tools/call, %s: %.0f instructions (callgrind), %.1f allocations of %.0f bytes in all (DHAT)"
              % ((name, instructions[name]) + allocations[name]))
    first = servers[0][0]
    for name, _, _ in servers[1:]:
        print("  %s / %s: instructions %.3fx, allocations %.2fx, bytes allocated %.2fx"
              % (first, name, instructions[first] / instructions[name],
                 allocations[first][0] / allocations[name][0], allocations[first][1] / allocations[name][1]))


if __name__ == "__main__":
    main()
