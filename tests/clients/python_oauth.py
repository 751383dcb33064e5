"""The Python SDK client (`mcp` 2.x) signs in given only the MCP URL, as
its users run it: `OAuthClientProvider` on the client's httpx2 client, a
loopback redirect URI, and the browser steps run by sign_in.mjs (this
server's consent page, the OpenID provider's sign-in). Then it calls a
tool, its access token goes bad, and it refreshes and calls again.

    CHROMIUM=... NODE=node python tests/clients/python_oauth.py MCP_URL

Prints `ok`/`FAILED` per check and last `python client: N passed, M failed`.
"""

import http.server
import pathlib
import queue
import subprocess
import sys
import threading
import urllib.parse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

HERE = pathlib.Path(__file__).resolve().parent
checks = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    checks["passed" if ok else "failed"] += 1
    print(f"ok - {name}" if ok else f"FAILED - {name}: {detail}", flush=True)


class Memory:
    """What the provider keeps between sign-in and calls, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def callback_server():
    """A loopback redirect URI; the parameters it receives, on a queue."""
    received = queue.Queue()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            received.put(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query)))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"Signed in; you can close this page.")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/callback", received


async def main(url, node):
    server, redirect_uri, received = callback_server()
    storage = Memory()

    async def redirect_handler(authorization_url):
        command = [node, str(HERE / "sign_in.mjs"), authorization_url, "Python SDK (unverified"]
        done = await anyio.to_thread.run_sync(lambda: subprocess.run(command, capture_output=True, text=True, timeout=180))
        check("the consent page names the client, and the browser signs in", done.returncode == 0, done.stderr[-600:])

    async def callback_handler():
        answer = await anyio.to_thread.run_sync(lambda: received.get(timeout=60))
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="Python SDK",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    oauth = OAuthClientProvider(url, metadata, storage, redirect_handler, callback_handler)
    try:
        async with httpx2.AsyncClient(auth=oauth, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool("test_simple_text", {})
                check("registered, signed in, and a tool call with the token", bool(result.content), repr(result))
                check("its client id came from registration", (storage.client.client_id or "").startswith("v1."), storage.client)
                # The access token expires: the client refreshes before its
                # next call (this SDK signs in again after a 401, so the
                # expiry it keeps is what is moved).
                before = storage.tokens
                oauth.context.token_expiry_time = 0.5
                again = await client.call_tool("test_simple_text", {})
                after = storage.tokens
                check(
                    "refreshed (a rotated refresh token) and called again",
                    bool(again.content) and after.access_token != before.access_token and after.refresh_token != before.refresh_token,
                    repr(after),
                )
    except Exception as error:  # noqa: BLE001 - any failure is the check's
        check("signs in and calls a tool", False, repr(error)[-800:])
    finally:
        server.shutdown()
    print(f"python client: {checks['passed']} passed, {checks['failed']} failed")
    return 1 if checks["failed"] else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: CHROMIUM=... NODE=node python python_oauth.py MCP_URL")
    import os

    sys.exit(anyio.run(main, sys.argv[1], os.environ.get("NODE", "node")))
