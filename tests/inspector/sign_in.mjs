// The Inspector's web UI signs in to a server that requires it, as a user
// would, given only the URL it was started with: switch the server on,
// approve on the stack's consent page, sign in at the OpenID provider
// (tests/clients/provider.mjs), come back connected, and run a tool.
// infra/oauth-clients.sh starts the stack and the Inspector and runs this.
//
//   CHROMIUM=... node tests/inspector/sign_in.mjs INSPECTOR_URL OUT_DIR
//
// Prints `ok`/`FAILED` per check and last `inspector sign-in: N passed, M failed`.
import { WAIT, session } from "./browser.mjs";

const [inspectorUrl, outDir] = process.argv.slice(2);
if (!outDir || !process.env.CHROMIUM) {
  console.error("usage: CHROMIUM=/path/to/chromium node sign_in.mjs INSPECTOR_URL OUT_DIR");
  process.exit(2);
}
const { page, check, finish } = await session(outDir, "inspector");

await check("switching the server on leads to the stack's consent page", async () => {
  await page.goto(inspectorUrl);
  // Mantine draws its track over the switch's input: the input takes the check.
  await page.getByRole("switch").first().check({ force: true });
  await page.getByRole("heading", { name: "Allow access to this MCP server?" }).waitFor(WAIT);
});
await check("approved and signed in, it comes back connected", async () => {
  await page.getByRole("button", { name: "Approve" }).click();
  await page.locator("input[name=login]").fill("alice");
  await page.locator("input[name=password]").fill("any password");
  await page.locator("button[type=submit]").click();
  // The provider's own consent for the authorization server's client, if it asks.
  await page.waitForURL((url) => url.hostname === "localhost" || url.pathname.startsWith("/interaction/"), WAIT);
  if (page.url().includes("/interaction/")) await page.locator("button[type=submit]").first().click();
  await page.getByText("Connected", { exact: true }).waitFor(WAIT);
});
await check("runs a tool with its token", async () => {
  await page.getByText("Tools", { exact: true }).first().click();
  await page.getByText("test_simple_text", { exact: true }).first().click();
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await page.getByText("This is a simple text response for testing.").first().waitFor(WAIT);
});
await finish("inspector sign-in");
