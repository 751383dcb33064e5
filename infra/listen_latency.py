"""Trigger-to-notification latency across instances: a listen stream held
by one server, `test_trigger_tool_change` called on another, the time from
sending the trigger to reading its notification on the stream.

    python infra/listen_latency.py LISTEN_URL TRIGGER_URL [COUNT]

Prints the median and p99 in milliseconds. Both servers must share a
change feed: two `everything` processes started with the emulator's
environment (`source .tmp/local.env`, as infra/test.sh starts them).
"""

import http.client
import json
import random
import statistics
import sys
import time
import urllib.parse

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def post(url, body, stream=False):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    params = body["params"]
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": body["method"],
    }
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    connection.request("POST", parts.path, json.dumps(body), headers)
    response = connection.getresponse()
    return response if stream else json.loads(response.read())


def events(response):
    buffer = b""
    while True:
        chunk = response.read1(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if data:
                yield json.loads(data)


def main():
    listen_url, trigger_url = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    stream = events(post(listen_url, {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                                      "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}, stream=True))
    assert next(stream)["method"] == "notifications/subscriptions/acknowledged"
    time.sleep(1.5)  # past the window in which a change counts as concurrent with the acknowledgement
    latencies = []
    for i in range(count):
        # At a random point of the stream's poll interval, as real changes come.
        time.sleep(random.uniform(0, 0.5))
        sent = time.monotonic()
        post(trigger_url, {"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                           "params": {"_meta": META, "name": "test_trigger_tool_change", "arguments": {}}})
        message = next(stream)
        assert message["method"] == "notifications/tools/list_changed", message
        latencies.append((time.monotonic() - sent) * 1000)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"listen latency across instances: {count} triggers, median {statistics.median(latencies):.0f} ms, "
          f"p99 {p99:.0f} ms, max {latencies[-1]:.0f} ms")


if __name__ == "__main__":
    main()
