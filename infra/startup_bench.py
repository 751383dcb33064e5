"""Process start to first tools/call answered, median of 20 runs, and the
peak RSS of a run that then serves 1,000 calls. Local server, loopback only."""

import json
import resource
import statistics
import subprocess
import sys
import time
import urllib.request

import tool_call  # infra/tool_call.py, beside this script

PORT = 39391
BODY = tool_call.body("text_stats", {"text": "hello world"})
HEADERS = tool_call.headers("text_stats")


def call():
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}/mcp", BODY, HEADERS)
    with urllib.request.urlopen(request, timeout=2) as response:
        assert json.load(response)["result"]["structuredContent"]["words"] == 2


def start(binary):
    env = {"MCP_LOCAL_ADDR": f"127.0.0.1:{PORT}", "MCP_LOG_LEVEL": "warn", "PATH": "/usr/bin:/bin"}
    return subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def first_answer(binary):
    began = time.perf_counter()
    process = start(binary)
    try:
        while True:
            try:
                call()
                return time.perf_counter() - began
            except OSError:
                time.sleep(0.001)
    finally:
        process.kill()
        process.wait()


def main():
    binary = sys.argv[1]
    times = sorted(first_answer(binary) for _ in range(20))
    print(f"start to first tools/call answered: median {statistics.median(times) * 1000:.1f} ms "
          f"(min {times[0] * 1000:.1f}, max {times[-1] * 1000:.1f}) over 20 runs")
    process = start(binary)
    try:
        while True:
            try:
                call()
                break
            except OSError:
                time.sleep(0.001)
        for _ in range(1000):
            call()
    finally:
        process.terminate()
        process.wait()
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak RSS (largest child, after 1,000 calls): {peak_kib / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
