// The official conformance suite's `authorization` command against the
// stack's authorization server: `authorization-server-metadata-endpoint`
// (its metadata at the well-known URLs, `issuer` equal to the one given)
// and `authorization-code-grant` (the suite prints an authorize URL and
// waits for a browser at its own loopback callback; then it checks the
// redirect's `code`, `state` and `iss`, and the token response). The suite
// needs a client id whose redirect URI is its callback: it is registered
// here first, as any client would (RFC 7591). Headless Chromium plays the
// user (sign_in.mjs).
//
//   CHROMIUM=... node tests/clients/conformance_authorization.mjs SUITE_CLI ISSUER MCP_URL OUT_DIR
//
// Prints the suite's own output, then `ok`/`FAILED` per scenario and last
// `conformance authorization: N passed, M failed`.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { readdirSync, readFileSync } from "node:fs";
import { launch, signInAs } from "./sign_in.mjs";
import { checks } from "./checks.mjs";

const [suite, issuer, mcpUrl, outDir] = process.argv.slice(2);
if (!outDir || !process.env.CHROMIUM) {
  console.error("usage: CHROMIUM=/path/to/chromium node conformance_authorization.mjs SUITE_CLI ISSUER MCP_URL OUT_DIR");
  process.exit(2);
}
const SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"];
// The suite waits up to 5 minutes for its callback; a sign-in that has not
// happened in 2 will not.
const WAIT = 120_000;
const { check, finish } = checks();

const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const metadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const registered = await fetch(metadata.registration_endpoint, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ client_name: "MCP conformance suite", redirect_uris: [`http://127.0.0.1:${port}/callback`],
    grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" }),
});
const client = await registered.json();
if (!registered.ok || !client.client_id) {
  check("conformance: a client id for the suite's callback", false, `${registered.status} ${JSON.stringify(client)}`);
  finish("conformance authorization");
}

const run = spawn(process.execPath, [suite, "authorization", "--url", issuer, "--client-id", client.client_id,
  "--port", String(port), "--resource", mcpUrl, "-o", `${outDir}/conformance-authorization`],
{ stdio: ["ignore", "pipe", "pipe"] });
const exited = new Promise((resolve) => run.on("exit", (code) => resolve(code)));
let said = "";
let signing = null;
const browser = await launch();
const read = (chunk) => {
  process.stdout.write(chunk);
  said += chunk;
  // The line after "Access the following URL in your browser" is the URL.
  const url = said.match(/^(http\S+\/authorize\?\S+)$/m)?.[1];
  if (url && !signing) signing = signInAs(browser, new URL(url)).then((shown) => shown, (e) => `error: ${e.message}`);
};
run.stdout.setEncoding("utf8").on("data", read);
run.stderr.setEncoding("utf8").on("data", read);
const timer = setTimeout(() => run.kill(), WAIT);
const code = await exited;
clearTimeout(timer);
const shown = signing ? await signing : "";
await browser.close();

check("conformance: the suite printed an authorize URL and the consent page named its client",
  shown.includes("MCP conformance suite"), shown.slice(0, 300) || said.slice(-600));
// Each scenario's checks, as the suite wrote them (-o).
const results = {};
for (const entry of readdirSync(`${outDir}/conformance-authorization`, { withFileTypes: true })) {
  const scenario = SCENARIOS.find((name) => entry.name.startsWith(`${name}-`) || entry.name.includes(`-${name}-`));
  if (!entry.isDirectory() || !scenario) continue;
  results[scenario] = JSON.parse(readFileSync(`${outDir}/conformance-authorization/${entry.name}/checks.json`, "utf8"));
}
for (const scenario of SCENARIOS) {
  const got = results[scenario] ?? [];
  const bad = got.filter((c) => c.status !== "SUCCESS");
  check(`conformance: ${scenario}`, got.length > 0 && bad.length === 0,
    got.length === 0 ? "no results written" : bad.map((c) => `${c.id} ${c.status} ${c.errorMessage ?? ""}`).join("; "));
}
check("conformance: the suite exited 0", code === 0, `exit ${code}`);
finish("conformance authorization");
