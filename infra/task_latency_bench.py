"""Task latency against a running server and worker: tools/call to
CreateTaskResult (the request's round trip), and enqueue to worker start
(the worker's "task run started" log line minus the task's createdAt; the
enqueue follows the create within the same request). Medians of N tasks.

usage: task_latency_bench.py URL WORKER_LOG [N]
"""

import datetime
import json
import re
import statistics
import sys
import time
import urllib.request

import mcp_client  # infra/mcp_client.py, beside this script

URL, LOG = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 20
CAPABILITIES = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


def rpc(method, params, name):
    body = mcp_client.request_body(method, params, capabilities=CAPABILITIES)
    headers = mcp_client.request_headers(method, name)
    with urllib.request.urlopen(urllib.request.Request(URL, body, headers), timeout=10) as response:
        return json.load(response)


def epoch(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


calls, created = [], {}
for i in range(N):
    started = time.perf_counter()
    answer = rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0, "label": f"bench-{i}"}}, "slow_compute")
    calls.append((time.perf_counter() - started) * 1000)
    result = answer["result"]
    assert result["resultType"] == "task", answer
    created[result["taskId"]] = epoch(result["createdAt"])
    time.sleep(0.05)
deadline = time.time() + 30
for task_id in created:
    while rpc("tasks/get", {"taskId": task_id}, task_id)["result"]["status"] == "working":
        assert time.time() < deadline, "tasks did not finish"
        time.sleep(0.05)
starts = {}
line = re.compile(r"^(\S+Z)\s+INFO .*task run started task=(tsk_\S+)")
with open(LOG, encoding="utf-8", errors="replace") as f:
    for text in f:
        match = line.search(re.sub(r"\x1b\[[0-9;]*m", "", text))
        if match and match.group(2) in created and match.group(2) not in starts:
            starts[match.group(2)] = epoch(match.group(1))
waits = [(starts[t] - created[t]) * 1000 for t in created if t in starts]
assert waits, f"no 'task run started' lines for these tasks in {LOG}"
print(f"tools/call -> CreateTaskResult: median {statistics.median(calls):.1f} ms, max {max(calls):.1f} ms (n={N})")
print(f"created -> worker started:      median {statistics.median(waits):.1f} ms, max {max(waits):.1f} ms (n={len(waits)})")
