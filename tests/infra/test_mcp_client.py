"""infra/mcp_client.py, the MCP client every script speaks through: the
envelope it writes and the answers it reads."""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "infra"))

import mcp_client  # noqa: E402


def test_a_request_carries_the_meta_and_headers_of_2026_07_28():
    body = json.loads(mcp_client.body("echo", {"text": "hi"}, capabilities={"elicitation": {}}, client_info={"name": "t"}))
    assert body["method"] == "tools/call" and body["params"]["arguments"] == {"text": "hi"}
    assert body["params"]["_meta"] == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "t"},
    }
    headers = mcp_client.headers("echo")
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert (headers["Mcp-Method"], headers["Mcp-Name"]) == ("tools/call", "echo")
    assert "Mcp-Name" not in mcp_client.request_headers("server/discover")


def test_events_are_read_whole_across_chunks_with_multi_line_data():
    chunks = [b": keep-alive\n\ndata: {\"a\"", b":1}\n\nid: 3\ndata: {\"id\": 1,\ndata: \"result\": {}}\n\n"]
    assert list(mcp_client.stream_messages(chunks)) == [{"a": 1}, {"id": 1, "result": {}}]


def test_crlf_lines_and_empty_data_are_read_as_the_standard_says():
    chunks = [b"data:\r\n\r\n: ping\r", b"\n\r\ndata: {\"id\": 2,\r\ndata: \"result\": 1}\r\n\r\n"]
    assert list(mcp_client.stream_messages(chunks)) == [{"id": 2, "result": 1}]


def test_the_final_message_of_a_whole_answer():
    stream = b"data: {\"method\": \"notifications/progress\"}\n\ndata: {\"id\": 7, \"result\": {\"ok\": true}}"
    assert mcp_client.final_message("text/event-stream", stream) == {"id": 7, "result": {"ok": True}}
    assert mcp_client.final_message("application/json", b'{"id": 1, "error": {"code": -32602}}')["error"]["code"] == -32602
    try:
        mcp_client.final_message("text/event-stream", b": only a comment\n\n")
    except ValueError:
        pass
    else:
        raise AssertionError("an answer without a response")


def test_call_sends_the_envelope_and_reads_a_streamed_or_refused_answer():
    import http.server
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((dict(self.headers), body))
            if body["method"] == "tools/call":
                payload, status, kind = b'data: {"jsonrpc": "2.0", "id": 1, "result": {"x": [5]}}\n\n', 200, "text/event-stream"
            else:
                payload, status, kind = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601}}', 404, "application/json"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/mcp"
    try:
        answer = mcp_client.call(url, "tools/call", {"name": "echo", "arguments": {}})
        assert mcp_client.field(answer, "result.x.0") == 5
        assert mcp_client.call(url, "initialize")["error"]["code"] == -32601
    finally:
        server.shutdown()
    headers, body = seen[0]
    assert headers["Mcp-Name"] == "echo" and headers["Mcp-Method"] == "tools/call"
    assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
