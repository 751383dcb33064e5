// 2025-era clients against a running server, as their users run them:
// the TypeScript SDK v1 Client over Streamable HTTP, and the same Client
// over stdio through mcp-remote (the bridge desktop clients such as
// Claude Desktop and Cursor are configured with). Each initializes (a
// 2025 session), calls a tool, gets a prompt, reads a resource, and calls
// a tool that asks the user mid-call, answering the elicitation.
//
//   node tests/clients/legacy.mjs URL    # e.g. http://127.0.0.1:3939/mcp
//
// Prints `ok`/`FAILED` per check and last `legacy clients: N passed, M failed`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { checks, mcpRemoteTransport } from "./checks.mjs";

const url = process.argv[2];
if (!url) {
  console.error("usage: node legacy.mjs URL");
  process.exit(2);
}
const { check, finish } = checks();
const text = (result) => (result?.content ?? []).map((block) => block.text ?? "").join(" ");

async function exercise(label, transport) {
  const client = new Client({ name: `e2e-${label}`, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked += 1;
    return { action: "accept", content: { username: "testuser", email: "test@example.com" } };
  });
  try {
    await client.connect(transport);
    check(`${label}: initialize`, client.getServerVersion()?.name === "everything", JSON.stringify(client.getServerVersion()));
    // Over stdio the version is mcp-remote's to negotiate; over HTTP it is ours.
    if (label !== "mcp-remote") {
      const version = transport.protocolVersion ?? "";
      check(`${label}: a 2025 version negotiated`, version.startsWith("2025-"), version || "none");
    }
    const tool = await client.callTool({ name: "test_simple_text", arguments: {} });
    check(`${label}: a tool`, text(tool).length > 0 && !("resultType" in tool), JSON.stringify(tool));
    const prompt = await client.getPrompt({ name: "test_simple_prompt" });
    check(`${label}: a prompt`, prompt.messages?.length > 0, JSON.stringify(prompt));
    const resource = await client.readResource({ uri: "test://static-text" });
    check(`${label}: a resource`, resource.contents?.[0]?.text?.length > 0, JSON.stringify(resource));
    const asking = await client.callTool({ name: "test_elicitation", arguments: {} });
    check(`${label}: a tool that asks the user`, asked === 1 && text(asking).includes("testuser"), `asked ${asked}: ${JSON.stringify(asking)}`);
  } catch (error) {
    check(`${label}: the session`, false, error?.stack ?? String(error));
  } finally {
    await client.close().catch(() => {});
  }
}

await exercise("typescript-sdk-v1", new StreamableHTTPClientTransport(new URL(url)));
await exercise("mcp-remote", mcpRemoteTransport(url));
finish("legacy clients");
