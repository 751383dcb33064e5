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

import mcp_client  # infra/mcp_client.py, beside this script


def post(url, body, stream=False):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = mcp_client.request_headers(body["method"], body["params"].get("name"))
    connection.request("POST", parts.path, json.dumps(body), headers)
    response = connection.getresponse()
    return response if stream else json.loads(response.read())


def events(response):
    return mcp_client.stream_messages(mcp_client.reader(response))


def main():
    listen_url, trigger_url = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    listen = mcp_client.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    stream = events(post(listen_url, listen, stream=True))
    assert next(stream)["method"] == "notifications/subscriptions/acknowledged"
    time.sleep(1.5)  # past the window in which a change counts as concurrent with the acknowledgement
    latencies = []
    for i in range(count):
        # At a random point of the stream's poll interval, as real changes come.
        time.sleep(random.uniform(0, 0.5))
        sent = time.monotonic()
        post(trigger_url, mcp_client.request("tools/call", {"name": "test_trigger_tool_change", "arguments": {}}, 2 + i))
        message = next(stream)
        assert message["method"] == "notifications/tools/list_changed", message
        latencies.append((time.monotonic() - sent) * 1000)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"listen latency across instances: {count} triggers, median {statistics.median(latencies):.0f} ms, "
          f"p99 {p99:.0f} ms, max {latencies[-1]:.0f} ms")


if __name__ == "__main__":
    main()
