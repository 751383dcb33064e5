// Real clients sign in given only the MCP URL, as their users do, against
// the local stack infra/oauth-clients.sh starts (the MCP server, the
// authorization server on the same address, and an OpenID provider):
// - the TypeScript SDK v1 client with a Client ID Metadata Document (CIMD),
//   served here over https, and again with dynamic registration;
// - mcp-remote (registration), as desktop clients start it.
// Each discovers the server, signs in through headless Chromium (this
// server's consent page, then the provider's sign-in), calls a tool, and
// the SDK client refreshes its token. The consent page's picture is saved.
//
//   CHROMIUM=... node tests/clients/oauth.mjs MCP_URL OUT_DIR CIMD_PORT CERT KEY
//
// Prints `ok`/`FAILED` per check and last `oauth clients: N passed, M failed`.
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { launch, signInAs } from "./sign_in.mjs";
import { checks, mcpRemoteTransport } from "./checks.mjs";

const [mcpUrl, outDir, cimdPort, certFile, keyFile] = process.argv.slice(2);
if (!keyFile || !process.env.CHROMIUM) {
  console.error("usage: CHROMIUM=/path/to/chromium node oauth.mjs MCP_URL OUT_DIR CIMD_PORT CERT KEY");
  process.exit(2);
}
const { check, finish } = checks();
const text = (result) => (result?.content ?? []).map((block) => block.text ?? "").join(" ");

const browser = await launch();
let pictured = false;
const signIn = async (url, expectedClient) => {
  const shown = await signInAs(browser, url, pictured ? undefined : `${outDir}/consent.png`);
  pictured = true;
  check(`${expectedClient}: the consent page names the client`, shown.includes(expectedClient), shown);
};

/** A loopback redirect URI that hands the code it receives to whoever waits. */
async function callbackServer() {
  let deliver;
  const codes = new Promise((resolve) => { deliver = resolve; });
  const server = createServer((request, response) => {
    const query = new URL(request.url, "http://127.0.0.1").searchParams;
    response.end("Signed in; you can close this page.");
    deliver({ code: query.get("code"), iss: query.get("iss"), error: query.get("error") });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/callback`, codes, close: () => server.close() };
}

/** The SDK's OAuth client, keeping what it is given in memory. */
class MemoryProvider {
  constructor(redirectUrl, clientMetadataUrl, name) {
    this.redirect = redirectUrl;
    this.clientMetadataUrl = clientMetadataUrl;
    this.name = name;
    this.saved = {};
  }
  get redirectUrl() { return this.redirect; }
  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [this.redirect], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(client) { this.saved.client = client; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
}

async function typescriptClient(label, clientMetadataUrl) {
  const callback = await callbackServer();
  const name = `TypeScript SDK (${label})`;
  const provider = new MemoryProvider(callback.url, clientMetadataUrl, name);
  try {
    const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    const refused = await new Client({ name: "oauth-e2e", version: "1.0.0" }).connect(first).then(() => null, (e) => e);
    check(`${label}: the server asks the client to sign in`, refused instanceof UnauthorizedError && provider.authorizationUrl, String(refused));
    if (!provider.authorizationUrl) return;
    const shownName = clientMetadataUrl ? "published by localhost" : `${name} (unverified`;
    await signIn(provider.authorizationUrl, shownName);
    const answer = await callback.codes;
    check(`${label}: the browser returns a code with the issuer (RFC 9207)`, answer.code && answer.iss === new URL(mcpUrl).origin,
      JSON.stringify(answer));
    check(`${label}: client id ${clientMetadataUrl ? "is the metadata document's URL" : "came from registration"}`,
      clientMetadataUrl ? provider.saved.client?.client_id === clientMetadataUrl : provider.saved.client?.client_id?.startsWith("v1."),
      JSON.stringify(provider.saved.client));
    await first.finishAuth(answer.code);
    const client = new Client({ name: "oauth-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    const tool = await client.callTool({ name: "test_simple_text", arguments: {} });
    check(`${label}: a tool call with the token`, text(tool).length > 0, JSON.stringify(tool));
    // The access token goes bad: the client refreshes and calls again.
    const before = provider.saved.tokens;
    provider.saved.tokens = { ...before, access_token: "no-longer-valid" };
    const again = await client.callTool({ name: "test_simple_text", arguments: {} }).catch((e) => e);
    const after = provider.saved.tokens;
    check(`${label}: refreshed (a rotated refresh token) and called again`,
      text(again).length > 0 && after.access_token !== "no-longer-valid" && after.refresh_token !== before.refresh_token,
      String(again?.message ?? JSON.stringify(again)));
    await client.close();
  } catch (error) {
    check(`${label}: signs in and calls a tool`, false, error?.stack ?? String(error));
  } finally {
    callback.close();
  }
}

async function mcpRemote() {
  const transport = mcpRemoteTransport(mcpUrl);
  const client = new Client({ name: "oauth-e2e", version: "1.0.0" });
  let said = "";
  let signing = null;
  transport.stderr?.on("data", (chunk) => {
    said += chunk.toString();
    const url = said.match(/https?:\/\/\S+\/oauth\/authorize\?\S+/)?.[0];
    if (url && !signing) signing = signIn(new URL(url), "MCP CLI Proxy (unverified");
  });
  try {
    await client.connect(transport);
    await signing;
    check("mcp-remote: registered and signed in", signing !== null, said.slice(-600));
    const tool = await client.callTool({ name: "test_simple_text", arguments: {} });
    check("mcp-remote: a tool call with the token", text(tool).length > 0, JSON.stringify(tool));
  } catch (error) {
    check("mcp-remote: signs in and calls a tool", false, `${error?.message}; it said: ${said.slice(-800)}`);
  } finally {
    await client.close().catch(() => {});
  }
}

// The CIMD client's document, at an https URL of its own.
const cimdServer = createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) });
const documentUrl = `https://localhost:${cimdPort}/oauth/client-metadata.json`;
let cimdRedirect = "";
cimdServer.on("request", (request, response) => {
  response.setHeader("content-type", "application/json");
  response.end(JSON.stringify({ client_id: documentUrl, client_name: "TypeScript SDK (CIMD)", redirect_uris: [cimdRedirect],
    grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" }));
});
await new Promise((resolve) => cimdServer.listen(Number(cimdPort), "127.0.0.1", resolve));

// The redirect URI is the callback server's; the document names the one
// registered port, and loopback ports match any (RFC 8252, 7.3).
cimdRedirect = "http://127.0.0.1:1/callback";
await typescriptClient("CIMD", documentUrl);
await typescriptClient("registration", undefined);
await mcpRemote();
cimdServer.close();
await browser.close();
finish("oauth clients");
