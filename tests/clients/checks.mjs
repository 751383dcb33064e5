// What the client scripts share: `ok`/`FAILED` lines and their count, and
// mcp-remote (pinned in package-lock.json) started over stdio against a URL.
import { fileURLToPath } from "node:url";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const mcpRemote = fileURLToPath(new URL("./node_modules/mcp-remote/dist/proxy.js", import.meta.url));

/** Counts checks; `check(name, ok, detail)` prints each, `finish(label)` the closing line and exits. */
export function checks() {
  let passed = 0;
  let failed = 0;
  const check = (name, ok, detail) => {
    if (ok) {
      passed += 1;
      console.log(`ok - ${name}`);
    } else {
      failed += 1;
      console.log(`FAILED - ${name}: ${detail}`);
    }
  };
  const finish = (label) => {
    console.log(`${label}: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  };
  return { check, finish };
}

/** mcp-remote, the stdio bridge desktop clients start, in front of `url`. */
export function mcpRemoteTransport(url) {
  return new StdioClientTransport({
    command: process.execPath,
    args: [mcpRemote, url, "--allow-http", "--transport", "http-only"],
    env: { ...process.env },
    stderr: "pipe",
  });
}
