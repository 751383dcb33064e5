"""One 2026-07-28 request as the benchmark scripts send it (a `tools/call`
mostly): the JSON body (with `_meta`) and the headers a conforming client
adds."""

import json


def request_body(method, params):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": dict(params, _meta=meta)}).encode()


def request_headers(method, name=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def body(tool, arguments):
    return request_body("tools/call", {"name": tool, "arguments": arguments})


def headers(tool):
    return request_headers("tools/call", tool)
