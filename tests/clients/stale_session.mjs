// 2025-era clients driven across their session's first day and its end,
// each against its own local everything server on a clock this script moves
// (tests/support/clock_server.rs): the TypeScript SDK v1 Client over
// Streamable HTTP, which never initializes again after a 404 (so, with
// sessions of a day, it failed from its second day on until restarted), and
// the same Client through mcp-remote, which initializes again by itself.
//
//   node tests/clients/stale_session.mjs CLOCK_SERVER_BINARY
//
// Prints `ok`/`FAILED` per check, what each client saw after the session's
// 30 days (`seen`), and last `stale sessions: N passed, M failed`.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { checks, mcpRemoteTransport } from "./checks.mjs";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node stale_session.mjs CLOCK_SERVER_BINARY");
  process.exit(2);
}
const DAY = 24 * 3600;
const { check, finish } = checks();

/** A clock server: its URL, and `advance(seconds)`, answered once the clock moved. */
async function clockServer() {
  const server = spawn(binary, [], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error("the clock server ended");
    return value;
  };
  const url = await next();
  const advance = async (seconds) => {
    server.stdin.write(`advance ${seconds}\n`);
    const answer = await next();
    if (answer !== "ok") throw new Error(`the clock server said ${answer}`);
  };
  return { url, advance, stop: () => server.kill() };
}

const outcome = async (client) => {
  try {
    const result = await client.callTool({ name: "test_simple_text", arguments: {} });
    return (result.content ?? []).length > 0 ? "served" : `an empty result: ${JSON.stringify(result)}`;
  } catch (error) {
    return `refused: ${error?.message ?? error}`;
  }
};

async function across(label, transportFor) {
  const server = await clockServer();
  const client = new Client({ name: `stale-${label}`, version: "1.0.0" }, { capabilities: {} });
  try {
    await client.connect(transportFor(server.url));
    check(`${label}: served on its first day`, (await outcome(client)) === "served", "");
    for (const [after, days] of [[DAY + 60, "a day"], [6 * DAY, "a week"], [22 * DAY, "29 days"]]) {
      await server.advance(after);
      const seen = await outcome(client);
      check(`${label}: served after ${days}`, seen === "served", seen);
    }
    await server.advance(DAY);
    // Past the bound the session is gone (404); what the client does then
    // is its own: printed, not checked.
    console.log(`seen - ${label}: 30 days after initialize: ${await outcome(client)}`);
  } catch (error) {
    check(`${label}: the session`, false, error?.stack ?? String(error));
  } finally {
    await client.close().catch(() => {});
    server.stop();
  }
}

await across("typescript-sdk-v1", (url) => new StreamableHTTPClientTransport(new URL(url)));
await across("mcp-remote", mcpRemoteTransport);
finish("stale sessions");
