"""MCP 2026-07-28 over Streamable HTTP as this project's scripts speak it:
the one place that writes the request envelope (the JSON-RPC body with its
`_meta`, and the headers a conforming client adds) and reads answers (one
JSON body, or the messages of an event stream). Standard library only;
scripts import it from beside themselves (`infra/`).

Server-sent events are read as the HTML standard defines them: events end
with a blank line, and a message is the JSON of an event's `data:` lines
(one leading space dropped), joined by newlines when there are several;
events without data (keep-alive comments) carry no message.
"""

import json

VERSION = "2026-07-28"


def meta(capabilities=None, client_info=None, extra=None):
    """The per-request `_meta` of basic/index, "Per-request protocol fields"."""
    fields = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    if client_info is not None:
        fields["io.modelcontextprotocol/clientInfo"] = client_info
    fields.update(extra or {})
    return fields


def request(method, params, id=1, **meta_fields):
    """A JSON-RPC request for `method`, its `params` given a `_meta` (see meta())."""
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": dict(params, _meta=meta(**meta_fields))}


def request_body(method, params, id=1, **meta_fields):
    return json.dumps(request(method, params, id, **meta_fields)).encode()


def request_headers(method, name=None):
    """The standard headers (basic/transports/streamable-http); `name` is the
    tool, resource or task the request names (`Mcp-Name`)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def body(tool, arguments, **meta_fields):
    """A `tools/call` of `tool`."""
    return request_body("tools/call", {"name": tool, "arguments": arguments}, **meta_fields)


def headers(tool):
    return request_headers("tools/call", tool)


def event_message(event):
    """The message of one event (bytes or text, without its blank line), or None."""
    if isinstance(event, bytes):
        event = event.decode("utf-8", "replace")
    data = [line[5:][1:] if line[5:].startswith(" ") else line[5:]
            for line in event.replace("\r\n", "\n").split("\n") if line.startswith("data:")]
    # An event without data, or with empty data (a priming event), has no message.
    return json.loads("\n".join(data)) if "".join(data).strip() else None


def stream_messages(chunks):
    """The messages of an event stream as its chunks (bytes) arrive."""
    buffer = b""
    for chunk in chunks:
        # Lines may end in CRLF; a CR that ends one chunk meets its LF in the next.
        buffer = (buffer + chunk).replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            message = event_message(event)
            if message is not None:
                yield message


def reader(response):
    """The chunks of an http.client or urllib response, as they arrive."""
    while True:
        chunk = response.read1(65536)
        if not chunk:
            return
        yield chunk


def messages(content_type, raw):
    """Every message of a whole answer: its JSON body, or its events'."""
    if "text/event-stream" in (content_type or ""):
        return list(stream_messages([raw, b"\n\n"]))
    return [json.loads(raw)]


def final_message(content_type, raw):
    """The response (a message with `result` or `error`) of a whole answer."""
    for message in reversed(messages(content_type, raw)):
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return message
    raise ValueError("no response in the answer")


def call(url, method, params=None, name=None, capabilities=None, extra_headers=None, timeout=60):
    """One request to `url`; the response message (`result` or `error`).
    `Mcp-Name` is `name`, else what `params` names: the tool or prompt
    (`name`), the resource (`uri`) or the task (`taskId`)."""
    import urllib.error
    import urllib.request

    params = params or {}
    if name is None:
        name = params.get("name", params.get("uri", params.get("taskId")))
    request_ = urllib.request.Request(url, data=request_body(method, params, capabilities=capabilities), method="POST",
                                      headers=dict(request_headers(method, name), **(extra_headers or {})))
    try:
        with urllib.request.urlopen(request_, timeout=timeout) as response:
            status, content_type, raw = response.status, response.headers.get("Content-Type"), response.read()
    except urllib.error.HTTPError as error:
        # Refusals (4xx) still carry a JSON-RPC error body.
        status, content_type, raw = error.code, error.headers.get("Content-Type"), error.read()
    try:
        return final_message(content_type, raw)
    except ValueError as error:
        raise ValueError(f"HTTP {status} from {url} with no JSON-RPC response: {raw[:300]!r}") from error


def field(message, path):
    """The value at `path` of a message: keys and list indexes, separated by
    dots; a dot inside a key is written `\\.` (`result._meta.io\\.modelcontextprotocol/serverInfo`)."""
    import re

    value = message
    for key in (part.replace("\\.", ".") for part in re.split(r"(?<!\\)\.", path)) if path else []:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def main(argv):
    """`python3 infra/mcp_client.py URL METHOD [PARAMS_JSON] [FIELD]`: prints
    the response, or one field of it (strings bare), for shell scripts."""
    if len(argv) < 3:
        raise SystemExit("usage: mcp_client.py URL METHOD [PARAMS_JSON] [FIELD]")
    url, method = argv[1], argv[2]
    params = json.loads(argv[3]) if len(argv) > 3 and argv[3] else {}
    message = call(url, method, params)
    try:
        value = field(message, argv[4] if len(argv) > 4 else "")
    except (KeyError, IndexError, ValueError, TypeError):
        raise SystemExit(f"mcp_client: no {argv[4]} in the answer to {method}: {json.dumps(message)[:500]}")
    print(value if isinstance(value, str) else json.dumps(value))


if __name__ == "__main__":
    import sys

    main(sys.argv)
