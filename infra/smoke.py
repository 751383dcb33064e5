"""Smoke test of a running MCP endpoint: a deployed stack, the local server
or the function under `cargo lambda watch`. Called by infra/smoke.sh.

Checks, each printed as ok / FAIL / skip with the reason:
  server/discover answers with the server's name and the 2026-07-28 version;
  tools/list answers with a list of tools;
  a tool call (`echo`) answers with its text;
  a full multi-round call (`plan_reminder`: input_required twice, then complete);
  a handle (`create_basket`) is created, used (`add_item`, `view_basket`) and an
    unknown id is refused like any other tool error;
  a task (`build_report`, declaring the tasks extension) is created and polled
    with tasks/get until it completes: the queue, the worker and its event
    source mapping, end to end;
  with a token (auth on): the same request without it answers 401, and a
    WWW-Authenticate header, if any, is not renamed (x-amzn-Remapped-...);
  both protected-resource metadata URLs answer 200 with the endpoint as
    `resource` (or 404 at both when auth is off and no metadata is expected);
  where the server streams (it advertises listChanged): `index_pages`'s
    progress arrives while it works, and a subscriptions/listen stream is
    acknowledged and stays open while another request is answered.
Checks whose example tool a fork deleted are skipped, not failed.
"""

import argparse
import base64
import json
import os
import re
import secrets
import sys
import time
import urllib.error
import urllib.request

import mcp_client  # infra/mcp_client.py, beside this script
from mcp_client import VERSION


class Endpoint:
    def __init__(self, url, token, principal):
        self.url, self.token, self.principal = url, token, principal
        self.ids = 0
        self.streams = False

    def request(self, method, params, capabilities=None, name=None, token=True, meta=None):
        self.ids += 1
        body = mcp_client.request_body(method, params, self.ids, capabilities=capabilities,
                                       client_info={"name": "smoke", "version": "1"}, extra=meta)
        headers = mcp_client.request_headers(method, name or None)
        if token and self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.principal:
            headers["x-mcp-dev-principal"] = self.principal
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def post(self, method, params, **kw):
        return fetch(self.request(method, params, **kw))

    def stream(self, method, params, **kw):
        """Each JSON-RPC message of the answer as it arrives, with the time it came."""
        with urllib.request.urlopen(self.request(method, params, **kw), timeout=60) as response:
            for message in mcp_client.stream_messages(mcp_client.reader(response)):
                yield time.monotonic(), message

    def rpc(self, method, params, **kw):
        status, headers, raw = self.post(method, params, **kw)
        if status != 200:
            raise Failure("%s answered HTTP %d: %s" % (method, status, raw[:300].decode("utf-8", "replace")))
        message = parse(headers, raw)
        if "error" in message:
            raise Failure("%s answered error %s" % (method, json.dumps(message["error"])[:300]))
        return message["result"]

    def call(self, name, arguments, capabilities=None, **extra):
        params = dict({"name": name, "arguments": arguments}, **extra)
        return self.rpc("tools/call", params, capabilities=capabilities, name=name)


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def fetch(request):
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def parse(headers, raw):
    try:
        return mcp_client.final_message(headers.get("Content-Type"), raw)
    except ValueError as error:
        raise Failure(str(error))


def text(result):
    return " ".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))


def check_discover(mcp, tools):
    result = mcp.rpc("server/discover", {})
    info = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or {}
    if VERSION not in (result.get("supportedVersions") or []):
        raise Failure("supportedVersions lacks %s: %s" % (VERSION, json.dumps(result)[:300]))
    if result.get("resultType") != "complete":
        raise Failure("no resultType complete")
    # listChanged is advertised only where responses stream.
    mcp.streams = bool(((result.get("capabilities") or {}).get("tools") or {}).get("listChanged"))
    return "%s %s (%s)" % (info.get("name"), info.get("version"), "streaming" if mcp.streams else "buffered")


def check_tools_list(mcp, tools):
    result = mcp.rpc("tools/list", {})
    listed = result.get("tools")
    if not isinstance(listed, list):
        raise Failure("no tools array")
    tools.update(t["name"] for t in listed)
    return "%d tools" % len(listed)


def need(tools, *names):
    missing = [n for n in names if n not in tools]
    if missing:
        raise Skip("no %s tool here (a fork may delete the examples)" % ", ".join(missing))


def check_tool_call(mcp, tools):
    need(tools, "echo")
    said = text(mcp.call("echo", {"text": "smoke"}))
    if said != "echo: smoke":
        raise Failure("echo answered %r" % said)
    return "echo answered %r" % said


def check_multi_round(mcp, tools):
    need(tools, "plan_reminder")
    caps = {"elicitation": {"form": {}}}
    round1 = mcp.call("plan_reminder", {}, caps)
    if round1.get("resultType") != "input_required" or "what" not in (round1.get("inputRequests") or {}):
        raise Failure("round 1 is not input_required asking 'what': %s" % json.dumps(round1)[:300])
    what = {"what": {"action": "accept", "content": {"what": "check the smoke test"}}}
    round2 = mcp.call("plan_reminder", {}, caps, requestState=round1["requestState"], inputResponses=what)
    if round2.get("resultType") != "input_required" or "when" not in (round2.get("inputRequests") or {}):
        raise Failure("round 2 is not input_required asking 'when': %s" % json.dumps(round2)[:300])
    when = {"when": {"action": "accept", "content": {"when": "2026-12-01T09:00:00Z"}}}
    round3 = mcp.call("plan_reminder", {}, caps, requestState=round2["requestState"], inputResponses=when)
    if round3.get("resultType") != "complete" or "check the smoke test" not in text(round3):
        raise Failure("round 3 did not complete: %s" % json.dumps(round3)[:300])
    return "3 rounds, sealed requestState carried twice: %r" % text(round3)


def check_handle(mcp, tools):
    need(tools, "create_basket", "add_item", "view_basket")
    created = text(mcp.call("create_basket", {}))
    found = re.search(r"\bbsk_[A-Za-z0-9_-]{22}\b", created)
    if not found:
        raise Failure("no handle in %r" % created)
    basket = found.group(0)
    mcp.call("add_item", {"basket": basket, "item": "smoke", "quantity": 1})
    view = mcp.call("view_basket", {"basket": basket})
    if (view.get("structuredContent") or {}).get("lines") != [{"item": "smoke", "quantity": 1}]:
        raise Failure("view_basket shows %s" % json.dumps(view)[:300])
    unknown = "bsk_" + base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
    refused = mcp.call("view_basket", {"basket": unknown})
    if refused.get("isError") is not True:
        raise Failure("an unknown handle was not refused: %s" % json.dumps(refused)[:300])
    return "created %s..., used, unknown id refused: %r" % (basket[:8], text(refused)[:60])


TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def check_task(mcp, tools):
    need(tools, "build_report")
    created = mcp.call("build_report", {"topic": "smoke", "sections": 1}, TASKS)
    task_id = created.get("taskId")
    if created.get("resultType") != "task" or not task_id:
        raise Failure("no CreateTaskResult: %s" % json.dumps(created)[:300])
    deadline = time.monotonic() + 120
    while True:
        got = mcp.rpc("tasks/get", {"taskId": task_id}, capabilities=TASKS, name=task_id)
        status = got.get("status")
        if status == "completed":
            break
        if status in ("failed", "cancelled") or time.monotonic() > deadline:
            raise Failure("task %s is %s: %s" % (task_id[:8], status, json.dumps(got)[:300]))
        time.sleep(got.get("pollIntervalMs", 1000) / 1000)
    report = text(got.get("result") or {})
    if "# smoke" not in report:
        raise Failure("the completed task's result is %r" % report[:100])
    return "created, run by the worker, completed: %r" % report.splitlines()[0]


def check_unauthenticated(mcp, tools):
    if not mcp.token:
        raise Skip("no token given: auth is off at this endpoint, or not tested")
    status, headers, _ = mcp.post("tools/list", {}, token=False)
    if status != 401:
        raise Failure("a request without a token answered HTTP %d, not 401" % status)
    renamed = [k for k in headers.keys() if k.lower() == "x-amzn-remapped-www-authenticate"]
    plain = headers.get("WWW-Authenticate")
    if renamed and not plain:
        raise Failure("WWW-Authenticate was renamed to %s" % renamed[0])
    return "401%s" % ("; WWW-Authenticate: %s" % plain if plain else "; no WWW-Authenticate header (API Gateway sends none)")


def check_metadata(mcp, tools, expect_auth):
    base = mcp.url[: -len("/mcp")] if mcp.url.endswith("/mcp") else mcp.url.rstrip("/")
    found = []
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        status, _, raw = fetch(urllib.request.Request(base + path, method="GET"))
        if status == 404 and not expect_auth:
            found.append(404)
            continue
        if status != 200:
            raise Failure("%s answered HTTP %d" % (path, status))
        document = json.loads(raw)
        if document.get("resource") != mcp.url:
            raise Failure("%s names resource %r, not %r" % (path, document.get("resource"), mcp.url))
        if not document.get("authorization_servers"):
            raise Failure("%s lists no authorization_servers" % path)
        found.append(200)
    if found == [404, 404]:
        return "not published at either URL (auth off)"
    if 404 in found:
        raise Failure("published at one URL only")
    return "both URLs name resource %s" % mcp.url


def check_streamed_progress(mcp, tools):
    if not mcp.streams:
        raise Skip("the server answers whole (buffered transport)")
    need(tools, "index_pages")
    frames = list(mcp.stream("tools/call", {"name": "index_pages", "arguments": {"pages": 3}},
                             name="index_pages", meta={"progressToken": "smoke"}))
    progress = [at for at, message in frames if message.get("method") == "notifications/progress"]
    if len(progress) != 3 or "result" not in frames[-1][1]:
        raise Failure("expected 3 progress notifications, then the result: %s" % json.dumps([m for _, m in frames])[:300])
    ahead = frames[-1][0] - progress[0]
    # The tool works 0.3 s per page: progress sent as it happens leads the
    # result by two pages at least; buffered progress arrives with it.
    if ahead < 0.5:
        raise Failure("the first progress came only %.2f s before the result: not streamed" % ahead)
    return "3 progress notifications, the first %.1f s before the result" % ahead


def check_listen(mcp, tools):
    if not mcp.streams:
        raise Skip("no subscriptions/listen on the buffered transport")
    stream = mcp.stream("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    _, first = next(stream)
    if first.get("method") != "notifications/subscriptions/acknowledged":
        raise Failure("the first frame is not the acknowledgement: %s" % json.dumps(first)[:300])
    # Another request is served while the stream stays open. Closing it
    # here ends it for this client only: a Lambda holding it is not told
    # and runs it to its bound (MCP_LISTEN_SECONDS).
    mcp.rpc("tools/list", {})
    stream.close()
    return "acknowledged, and another request answered while it was open"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="the MCP endpoint, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/mcp")
    parser.add_argument("--principal", help="local development principal (x-mcp-dev-principal); ignored in Lambda")
    parser.add_argument("--expect-auth", action="store_true", help="protected-resource metadata must be published")
    args = parser.parse_args()
    token = os.environ.get("MCP_SMOKE_TOKEN") or None
    mcp = Endpoint(args.url, token, args.principal)
    tools = set()
    checks = [
        ("server/discover", check_discover),
        ("tools/list", check_tools_list),
        ("tool call", check_tool_call),
        ("multi-round call", check_multi_round),
        ("handle", check_handle),
        ("task", check_task),
        ("streamed progress", check_streamed_progress),
        ("listen stream", check_listen),
        ("no token: 401", check_unauthenticated),
        ("protected-resource metadata", lambda m, t: check_metadata(m, t, args.expect_auth or bool(token))),
    ]
    counts = {"ok": 0, "FAIL": 0, "skip": 0}
    print("smoke: %s" % args.url)
    for name, check in checks:
        try:
            outcome, detail = "ok", check(mcp, tools)
        except Skip as skip:
            outcome, detail = "skip", str(skip)
        except Failure as failure:
            outcome, detail = "FAIL", str(failure)
        except (OSError, ValueError, KeyError) as error:
            outcome, detail = "FAIL", "%s: %s" % (type(error).__name__, error)
        counts[outcome] += 1
        print("  %-4s  %s: %s" % (outcome, name, detail))
    print("smoke: %d passed, %d failed, %d skipped" % (counts["ok"], counts["FAIL"], counts["skip"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
