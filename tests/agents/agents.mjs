// Coding agents sign in given only the MCP URL and call a tool, against
// the local stack infra/oauth-clients.sh starts:
// - Claude Code (`claude mcp add`, then `claude mcp login`, which needs a
//   terminal: `script` gives it one) with its real client id, the
//   metadata document at claude.ai, which cannot be fetched from a test:
//   the authorization server's pinned copy stands in for it;
// - Gemini CLI, which registers itself (RFC 7591) and signs in on its own
//   when the server first answers 401, asking on stdin whether to open
//   the browser.
// Their browser is a script that hands the URL it is asked to open to
// headless Chromium (../clients/sign_in.mjs). Their model is the scripted
// one (scripted_model.mjs): it calls the MCP server's `test_simple_text`
// tool, then answers with what the tool said. Each agent then runs again
// with its stored access token made to look expired, so it must refresh.
//
//   CHROMIUM=... node tests/agents/agents.mjs MCP_URL OUT_DIR MCP_LOG AUTHORIZATION_LOG
//
// Prints `ok`/`FAILED` per check and last `agents: N passed, M failed`.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { launch, signInAs } from "../clients/sign_in.mjs";
import { checks } from "../clients/checks.mjs";
import { startScriptedModel } from "./scripted_model.mjs";

const [mcpUrl, outDir, mcpLog, authorizationLog] = process.argv.slice(2);
if (!authorizationLog || !process.env.CHROMIUM) {
  console.error("usage: CHROMIUM=/path/to/chromium node agents.mjs MCP_URL OUT_DIR MCP_LOG AUTHORIZATION_LOG");
  process.exit(2);
}
const TOOL = "test_simple_text";
const TOOL_SAYS = "This is a simple text response for testing.";
// Bounds for a loaded two-core machine; every wait ends as soon as what it
// waits for has happened.
const WAIT = 120_000;
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const claude = here("./node_modules/@anthropic-ai/claude-code/bin/claude.exe");
const gemini = here("./node_modules/@google/gemini-cli/bundle/gemini.js");
const { check, finish } = checks();
const model = await startScriptedModel(TOOL, `${outDir}/model.log`);
const browser = await launch();

// The browser the agents open: a script that writes the URL down for us.
mkdirSync(`${outDir}/bin`, { recursive: true });
const opener = `${outDir}/bin/xdg-open`;
writeFileSync(opener, '#!/bin/sh\nprintf "%s\\n" "$1" >> "$OPENED_URLS"\n');
chmodSync(opener, 0o755);

/** Runs a command to its end (bounded); `{ code, said }`. `onOutput(said, child)` sees the output as it comes. */
function run(command, args, options, onOutput = () => {}) {
  const child = spawn(command, args, { ...options, stdio: ["pipe", "pipe", "pipe"] });
  // Nothing to say to it: its stdin closed, so it does not wait for any.
  if (!onOutput.length) child.stdin.end();
  let said = "";
  const hear = (chunk) => { said += chunk; onOutput(said, child); };
  child.stdout.setEncoding("utf8").on("data", hear);
  child.stderr.setEncoding("utf8").on("data", hear);
  const timer = setTimeout(() => child.kill("SIGKILL"), WAIT);
  return new Promise((resolve) => child.on("close", (code) => {
    clearTimeout(timer);
    resolve({ code, said, child });
  }));
}

/** Signs in at the first URL the agent opens, once it opens one; the consent page's text, or why not. */
const CLAUDE_CODE = "https://claude.ai/oauth/claude-code-client-metadata";

async function signInWhenOpened(urls, running) {
  let done = false;
  running.then(() => { done = true; });
  for (const started = Date.now(); Date.now() - started < WAIT && !done; await sleep(200)) {
    // A line once it is whole (the opener writes it with its newline).
    const written = existsSync(urls) ? readFileSync(urls, "utf8") : "";
    const url = written.includes("\n") ? written.split("\n")[0] : "";
    if (url) return signInAs(browser, new URL(url)).catch((e) => `error: ${e.message}`);
  }
  return "the agent opened no URL";
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const toolCalls = () => (readFileSync(mcpLog, "utf8").match(new RegExp(`method="tools/call" name="${TOOL}"[^\\n]*status=200`, "g")) ?? []).length;
const lines = (file) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);
const plain = (text) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g, "");

/** An agent's run of one prompt: the tool call reached the MCP server and its answer reached the model. */
async function callsTheTool(label, command, args, options, onOutput) {
  const calls = toolCalls();
  const seen = model.toolResults.length;
  const { code, said } = await run(command, args, options, onOutput);
  check(`${label}: exited 0`, code === 0, `exit ${code}: ${plain(said).slice(-800)}`);
  check(`${label}: the tool call reached the MCP server`, toolCalls() > calls, `no tools/call ${TOOL} in the MCP server's log`);
  check(`${label}: the model saw the tool's answer`, model.toolResults.slice(seen).some((r) => r.includes(TOOL_SAYS)),
    `tool results seen: ${JSON.stringify(model.toolResults.slice(seen))}`);
  return plain(said);
}

async function claudeCode() {
  const home = `${outDir}/claude`;
  const project = `${home}/project`;
  mkdirSync(project, { recursive: true });
  const env = { ...process.env, HOME: home, CLAUDE_CONFIG_DIR: `${home}/config`, BROWSER: opener,
    OPENED_URLS: `${home}/opened.txt`, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "scripted-model",
    DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    // Every MCP tool in the model's tool list, not behind its tool search:
    // the scripted model calls the tool it is offered.
    ENABLE_TOOL_SEARCH: "false" };
  const options = { cwd: project, env };
  const added = await run(claude, ["mcp", "add", "--transport", "http", "stack", mcpUrl], options);
  check("Claude Code: `claude mcp add` took the URL", added.code === 0, added.said);

  // `claude mcp login` insists on a terminal; `script` gives it one.
  const login = run("script", ["-qfec", `'${claude}' mcp login stack`, "/dev/null"], options, (_said, _child) => {});
  const shown = await signInWhenOpened(env.OPENED_URLS, login);
  const { code, said } = await login;
  const opened = existsSync(env.OPENED_URLS) ? readFileSync(env.OPENED_URLS, "utf8").trim() : "";
  console.log(`# Claude Code opened: ${opened.slice(0, 200)}`);
  console.log(`# Claude Code said: ${plain(said).trim().split("\n").slice(-2).join(" | ")}`);
  check("Claude Code: signs in with its metadata document's URL as client id",
    new URL(opened || "http://x").searchParams.get("client_id") === CLAUDE_CODE, opened);
  check("Claude Code: the consent page names it", shown.includes("Claude Code"), shown.slice(0, 400));
  // Its document's host is out of reach here: the pinned copy stood in.
  const pinned = readFileSync(authorizationLog, "utf8").split("\n").find((line) =>
    line.includes('event="document_fetch_failed"') && line.includes(`client_id="${CLAUDE_CODE}"`) &&
    line.includes("the pinned copy stood in"));
  check("Claude Code: the authorization server's pinned copy of its document stood in", Boolean(pinned),
    "no such line in the authorization server's log");
  check("Claude Code: `claude mcp login` succeeded", code === 0, `exit ${code}: ${plain(said).slice(-600)}`);

  const prompt = ["-p", `Call the ${TOOL} tool.`, "--allowedTools", `mcp__stack__${TOOL}`];
  const first = await callsTheTool("Claude Code", claude, prompt, options);
  console.log(`# Claude Code answered: ${first.trim().split("\n")[0]}`);

  // The stored token made to look expired: the next run must refresh it.
  const file = `${env.CLAUDE_CONFIG_DIR}/.credentials.json`;
  const stored = JSON.parse(readFileSync(file, "utf8"));
  const entry = Object.values(stored.mcpOAuth ?? {}).find((e) => e.serverName === "stack");
  check("Claude Code: stored an access token and a refresh token", Boolean(entry?.accessToken && entry?.refreshToken),
    JSON.stringify(Object.keys(entry ?? {})));
  if (!entry?.refreshToken) return;
  const before = entry.accessToken;
  entry.expiresAt = Date.now() - 60_000;
  writeFileSync(file, JSON.stringify(stored));
  await callsTheTool("Claude Code, its token expired", claude, prompt, options);
  const after = Object.values(JSON.parse(readFileSync(file, "utf8")).mcpOAuth).find((e) => e.serverName === "stack");
  check("Claude Code: refreshed its access token, without signing in again",
    after.accessToken && after.accessToken !== before && lines(env.OPENED_URLS).length === 1,
    `${after.accessToken === before ? "the same token" : "a new token"}, ${lines(env.OPENED_URLS).length} sign-ins`);
  // The authorization server's own account: one sign-in and a refresh, by this client, and no token in its log.
  const logged = readFileSync(authorizationLog, "utf8").split("\n").filter((line) => line.includes(`client_id="${CLAUDE_CODE}"`));
  const events = (name) => logged.filter((line) => line.includes(`event="${name}"`)).length;
  check("Claude Code: the authorization server logged its sign-in and its refresh",
    events("sign_in") >= 1 && events("refresh") >= 1, `sign_in ${events("sign_in")}, refresh ${events("refresh")}`);
  check("the authorization server's log holds no token", !/eyJ[A-Za-z0-9_-]{10,}\.|refresh_token=|access_token=/.test(readFileSync(authorizationLog, "utf8")),
    "a JWT or a token parameter in the log");
}

async function geminiCli() {
  const home = `${outDir}/gemini`;
  const project = `${home}/project`;
  mkdirSync(`${home}/.gemini`, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(`${home}/.gemini/settings.json`, JSON.stringify({
    // `oauth.enabled` only lets it sign in while connecting (else it waits
    // for `/mcp auth stack` typed in its terminal UI); no endpoint and no
    // client id: it discovers them from the URL and registers.
    mcpServers: { stack: { httpUrl: mcpUrl, trust: true, oauth: { enabled: true } } },
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  }, null, 2));
  const env = { ...process.env, HOME: home, PATH: `${outDir}/bin:${process.env.PATH}`, OPENED_URLS: `${home}/opened.txt`,
    GOOGLE_GEMINI_BASE_URL: model.url, GEMINI_API_KEY: "scripted-model", GEMINI_FORCE_FILE_STORAGE: "true",
    // A fresh folder, trusted as a user would trust their project.
    GEMINI_CLI_TRUST_WORKSPACE: "true", CI: "", GITHUB_ACTIONS: "" };
  const options = { cwd: project, env };
  // It asks before opening the browser: "Do you want to continue? [Y/n]".
  let answered = false;
  const agree = (said, child) => {
    if (!answered && said.includes("[Y/n]")) {
      answered = true;
      child.stdin.write("y\n");
    }
  };
  const prompt = [gemini, "-p", `Call the ${TOOL} tool.`];
  const first = callsTheTool("Gemini CLI", process.execPath, prompt, options, agree);
  const shown = await signInWhenOpened(env.OPENED_URLS, first);
  const said = await first;
  const opened = existsSync(env.OPENED_URLS) ? readFileSync(env.OPENED_URLS, "utf8").trim() : "";
  console.log(`# Gemini CLI opened: ${opened.slice(0, 200)}`);
  console.log(`# Gemini CLI answered: ${said.trim().split("\n").slice(-1)[0]}`);
  check("Gemini CLI: the consent page names it", shown.includes("Gemini CLI"), shown.slice(0, 400));

  const file = `${home}/.gemini/mcp-oauth-tokens.json`;
  const stored = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : [];
  const entry = [].concat(stored).find((e) => e.serverName === "stack");
  check("Gemini CLI: stored an access token and a refresh token", Boolean(entry?.token?.accessToken && entry?.token?.refreshToken),
    JSON.stringify(entry ? Object.keys(entry.token ?? {}) : stored));
  if (!entry?.token?.refreshToken) return;
  const before = entry.token.accessToken;
  entry.token.expiresAt = Date.now() - 60_000;
  writeFileSync(file, JSON.stringify(stored));
  await callsTheTool("Gemini CLI, its token expired", process.execPath, prompt, options, agree);
  const after = [].concat(JSON.parse(readFileSync(file, "utf8"))).find((e) => e.serverName === "stack");
  check("Gemini CLI: refreshed its access token, without signing in again",
    after?.token?.accessToken && after.token.accessToken !== before && lines(env.OPENED_URLS).length === 1,
    `${after?.token?.accessToken === before ? "the same token" : "a new token"}, ${lines(env.OPENED_URLS).length} sign-ins`);
}

try {
  await claudeCode();
  await geminiCli();
} finally {
  await browser.close();
  model.close();
}
console.log(`# the scripted model was asked: ${[...new Set(model.requests)].join(", ")}`);
finish("agents");
