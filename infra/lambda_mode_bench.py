"""The function in Lambda mode, fed by a stand-in Lambda Runtime API on
loopback: process start to the first event answered (median of 20 cold
starts), and the peak RSS after 1,000 events. Each event is
tests/fixtures/apigw-v2-tools-list.json turned into an `echo` call; nothing
touches AWS (the SDK is configured, as in Lambda, but not called).

usage: lambda_mode_bench.py BINARY
"""

import json
import pathlib
import statistics
import subprocess
import sys
import time

import mcp_client  # infra/mcp_client.py, beside this script
import runtime_api

ROOT = pathlib.Path(__file__).resolve().parents[1]
EVENT = json.loads((ROOT / "tests/fixtures/apigw-v2-tools-list.json").read_text())
EVENT["headers"]["mcp-method"] = "tools/call"
EVENT["headers"]["mcp-name"] = "echo"
EVENT["body"] = mcp_client.body("echo", {"text": "hello"}).decode()
EVENT_BYTES = json.dumps(EVENT).encode()


def start(binary, api):
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_LAMBDA_RUNTIME_API": api.address,
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
    api = runtime_api.RuntimeApi()
    for _ in range(events):
        api.push(EVENT_BYTES)
    began = time.perf_counter()
    process = start(binary, api)
    try:
        for n in range(events):
            started, _, status, body = api.answer(timeout=10)
            assert status == 200 and b"echo: hello" in body, body[:300]
            if n == 0:
                # From the answer's first bytes: the runtime client writes
                # headers and body apart.
                first = started - began
        status = pathlib.Path(f"/proc/{process.pid}/status").read_text()
        peak = int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1])
        return first, peak
    finally:
        process.kill()
        process.wait()
        api.close()


def main():
    binary = sys.argv[1]
    firsts = sorted(serve(binary, 1)[0] for _ in range(20))
    _, peak = serve(binary, 1000)
    print(f"Lambda mode, start to first event answered: median {statistics.median(firsts) * 1000:.1f} ms "
          f"(min {firsts[0] * 1000:.1f}, max {firsts[-1] * 1000:.1f}) over 20 runs")
    print(f"Lambda mode, peak RSS after 1,000 events: {peak / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
