"""The back channel across two processes: how long after a 2025-era
client's answer reaches one instance the call held by another resumes and
answers, and how many mailbox reads the holding call makes per second it
waits. Both instances are the everything function on the emulator's key
and table (.tmp/local.env, which infra/bootstrap.sh writes), sharing
nothing else; infra/bench.sh runs it on the debug build.

    python3 back_channel_bench.py BINARY [CALLS] [WAIT_SECONDS]

Each of CALLS (default 50) calls `test_elicitation` on the first
instance, answers its `elicitation/create` on the second, and times the
answer's POST to the call's final message. Then one call whose answer is
held back WAIT_SECONDS (default 10): its log line's `mailbox_reads` over
the wait is the read rate. Prints medians and p99; a loaded machine moves
the absolute figures, not what they are made of.
"""

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def env_file(path):
    values = {}
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export "):]
            if "=" in line and not line.startswith("#"):
                name, value = line.split("=", 1)
                values[name] = value.strip("'\"")
    return values


def start(binary, port, log):
    env = dict(os.environ, **env_file(os.path.join(ROOT, ".tmp", "local.env")), MCP_LOCAL_ADDR=f"127.0.0.1:{port}")
    process = subprocess.Popen([binary], env=env, stdout=log, stderr=log)
    for _ in range(600):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/")
            connection.getresponse().read()
            return process
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the instance on port {port} never answered")


def post(port, body, headers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    return connection.getresponse()


def events(response):
    """The JSON-RPC messages of an event stream, as they arrive."""
    data = []
    while True:
        line = response.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []


def one_call(holder, other, headers, hold_back=0.0):
    """Seconds from the answer's POST to the call's final message."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {}}}
    stream = events(post(holder, call, headers))
    asked = next(message for message in stream if message.get("method") == "elicitation/create")
    time.sleep(hold_back)
    answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"username": "u", "email": "u@example.com"}}}
    started = time.perf_counter()
    taken = post(other, answer, headers)
    taken.read()
    assert taken.status == 202, taken.status
    final = next(message for message in stream if message.get("id") == 2)
    elapsed = time.perf_counter() - started
    assert "u" in final["result"]["content"][0]["text"], final
    return elapsed


def main():
    binary = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    wait = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    holder, other = 39401, 39402
    with tempfile.TemporaryDirectory() as logs:
        holder_log = open(os.path.join(logs, "holder.log"), "w+")
        processes = [start(binary, holder, holder_log), start(binary, other, open(os.path.join(logs, "other.log"), "w"))]
        try:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "bench", "version": "1"}}}
            reply = post(other, initialize, JSON)
            reply.read()
            headers = dict(JSON, **{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": reply.getheader("mcp-session-id")})
            one_call(holder, other, headers)  # warms both instances' keys and connections
            times = sorted(one_call(holder, other, headers) for _ in range(calls))
            p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
            print(f"answer to resumed answer, across two processes ({calls} calls): median {statistics.median(times) * 1000:.1f} ms, "
                  f"p99 {p99 * 1000:.1f} ms")
            holder_log.flush()
            before = holder_log.tell()
            one_call(holder, other, headers, hold_back=wait)
            time.sleep(0.5)  # the call's log line is written as its stream ends
            holder_log.seek(before)
            reads = [int(found) for found in re.findall(r"mailbox_reads=(\d+)", holder_log.read())]
            if reads:
                print(f"mailbox reads while a call waits {wait:.0f} s for its answer: {reads[-1]} ({reads[-1] / wait:.2f} per waiting second)")
            else:
                print("mailbox reads: no request log line with mailbox_reads (is MCP_LOG_LEVEL below info?)")
        finally:
            for process in processes:
                process.terminate()
                process.wait()


if __name__ == "__main__":
    main()
