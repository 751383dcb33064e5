"""Cold start side by side: process start to the first `tools/call`
answered (after one `server/discover`, as a client opens), and that first
call against the second, for each server, with
the servers' starts interleaved (A, B, A, B, ...) so that a machine's load
falls on all of them alike. Medians, and ratios to the others from the
same run. Then each server's peak RSS once it has served 1,000 calls.

    python3 cold_start_bench.py [--starts N] NAME=COMMAND [NAME=COMMAND ...]

COMMAND may contain {port}; the server also gets PORT and MCP_LOCAL_ADDR
in its environment. Every server must have an `echo` tool. The first
server is compared with each of the others.
"""

import argparse
import http.client
import os
import shlex
import socket
import statistics
import subprocess
import time

import mcp_client  # infra/mcp_client.py, beside this script

PORT = 39396
CALL = (mcp_client.body("echo", {"text": "hello"}), mcp_client.headers("echo"), b"hello")
DISCOVER = (mcp_client.request_body("server/discover", {}), mcp_client.request_headers("server/discover"),
            b"serverInfo")


def send(request):
    """One request on a new connection, as each of a client's would be."""
    body, headers, expected = request
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    try:
        connection.request("POST", "/mcp", body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
    finally:
        connection.close()
    if response.status != 200 or expected not in payload:
        raise SystemExit(f"unexpected answer {response.status}: {payload[:200]!r}")


def listening():
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        return True
    except OSError:
        return False


def launch(command):
    """The server started and listening; and when it was started."""
    env = dict(os.environ, PORT=str(PORT), MCP_LOCAL_ADDR=f"127.0.0.1:{PORT}", MCP_LOG_LEVEL="warn")
    began = time.perf_counter()
    process = subprocess.Popen(shlex.split(command.format(port=PORT)), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = began + 30
    while not listening():
        if process.poll() is not None or time.perf_counter() > deadline:
            process.kill()
            raise SystemExit(f"{command} never listened on {PORT}")
        time.sleep(0.0005)
    return process, began


def stop(process):
    process.kill()
    process.wait()


def one_start(command):
    """(start to first answer, first call, second call), in seconds."""
    process, began = launch(command)
    try:
        send(DISCOVER)
        first_sent = time.perf_counter()
        send(CALL)
        answered = time.perf_counter()
        send(CALL)
        second = time.perf_counter() - answered
        return answered - began, answered - first_sent, second
    finally:
        stop(process)


def peak_rss_mib(command, calls=1000):
    process, _ = launch(command)
    try:
        for _ in range(calls):
            send(CALL)
        status = open(f"/proc/{process.pid}/status").read()
        return int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) / 1024
    finally:
        stop(process)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("servers", nargs="+")
    args = parser.parse_args()
    servers = [arg.split("=", 1) for arg in args.servers]
    runs = {name: [] for name, _ in servers}
    for _ in range(args.starts):
        for name, command in servers:
            runs[name].append(one_start(command))
    medians = {}
    for name, _ in servers:
        cold, first, second = (statistics.median(column) * 1000 for column in zip(*runs[name]))
        medians[name] = cold
        print(f"cold start, {name}: start to first tools/call answered {cold:.2f} ms; "
              f"first call {first:.2f} ms, second {second:.2f} ms: first / second {first / second:.2f}x "
              f"(medians of {args.starts} interleaved starts)")
    first = servers[0][0]
    for name, _ in servers[1:]:
        print(f"  cold start {first} / {name}: {medians[first] / medians[name]:.2f}x")
    rss = {name: peak_rss_mib(command) for name, command in servers}
    for name, _ in servers:
        print(f"peak RSS after 1,000 sequential calls, {name}: {rss[name]:.1f} MiB")
    for name, _ in servers[1:]:
        print(f"  peak RSS {first} / {name}: {rss[first] / rss[name]:.2f}x")


if __name__ == "__main__":
    main()
