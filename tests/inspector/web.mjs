// Drives the MCP Inspector's web UI in headless Chromium as a user would:
// connect (on the era the Inspector was started with: $EXPECTED_VERSION,
// 2026-07-28 unless set, is the version it must show), run a tool, answer
// a multi-round call's two questions, and take a task through its
// input_required step. In the legacy era the server asks each question on
// the call's stream; in the modern era the Inspector retries the call.
// infra/inspector.sh starts the Inspector against the starter and runs this.
//
//   node tests/inspector/web.mjs INSPECTOR_URL OUT_DIR [CATALOG_URL]
//
// INSPECTOR_URL is the address the Inspector prints, token included, for
// the README's ad-hoc server. CATALOG_URL, when given, is an Inspector
// started on a writable catalog (where per-server OAuth settings live):
// its redirect URI must be one of $EXPECTED_REDIRECTS (comma-separated).
// The browser is $CHROMIUM. Prints `ok`/`FAILED` per check, a screenshot of
// each failure in OUT_DIR, and last `inspector web: N passed, M failed`.
import { WAIT, session } from "./browser.mjs";

const [inspectorUrl, outDir, catalogUrl] = process.argv.slice(2);
if (!inspectorUrl || !outDir || !process.env.CHROMIUM) {
  console.error("usage: CHROMIUM=/path/to/chromium node web.mjs INSPECTOR_URL OUT_DIR");
  process.exit(2);
}
const version = process.env.EXPECTED_VERSION ?? "2026-07-28";
const { page, check, finish } = await session(outDir, version);

// A tool from the list, opened in the middle column.
async function openTool(name) {
  await page.getByText("Tools", { exact: true }).first().click();
  await page.getByText(name, { exact: true }).first().click();
}

// An elicitation form's one field, answered and submitted.
async function answer(question, field, value) {
  await page.getByText(question).waitFor(WAIT);
  await page.getByRole("textbox", { name: field }).fill(value);
  await page.getByRole("button", { name: "Submit" }).click();
}

await check(`connects over Streamable HTTP at MCP ${version}`, async () => {
  await page.goto(inspectorUrl);
  // Mantine draws its track over the switch's input: the input takes the check.
  await page.getByRole("switch").first().check({ force: true });
  await page.getByText("Connected", { exact: true }).waitFor(WAIT);
  await page.getByText(`MCP ${version}`, { exact: true }).waitFor(WAIT);
});

await check("runs a tool: slugify", async () => {
  await openTool("slugify");
  await page.getByRole("textbox", { name: /title/ }).fill("Hello World");
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await page.getByText("hello-world", { exact: true }).waitFor(WAIT);
});

await check("answers a multi-round call: plan_reminder asks what, then when", async () => {
  await openTool("plan_reminder");
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await answer("What should I remind you about?", "what", "water the plants");
  await answer("When should I remind you to water the plants?", "when", "2026-12-24T09:00:00Z");
  await page.getByText("Reminder set: water the plants, at 2026-12-24T09:00:00Z.").waitFor(WAIT);
});

await check("takes a task through input_required: publish_article", async () => {
  await openTool("publish_article");
  await page.getByRole("textbox", { name: /title/ }).fill("Lambda notes");
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await page.getByText('Publish "Lambda notes" now?').waitFor(WAIT);
  await page.getByRole("checkbox", { name: "publish" }).check({ force: true });
  await page.getByRole("button", { name: "Submit" }).click();
  await page.getByText("Published: Lambda notes: a short article.").first().waitFor(WAIT);
});

if (catalogUrl) {
  await check("its OAuth redirect URI is a default Cognito callback of the template", async () => {
    await page.goto(catalogUrl);
    await page.getByRole("button", { name: "Settings", exact: true }).first().click();
    await page.getByText("OAuth Settings").click();
    const redirect = await page.getByRole("textbox", { name: "Redirect URI" }).inputValue();
    const expected = (process.env.EXPECTED_REDIRECTS ?? "").split(",");
    if (!expected.includes(redirect)) throw new Error(`redirect URI ${redirect}, not one of ${expected.join(", ")}`);
  });
}

await finish("inspector web");
