// A user signing in through the stack's pages in headless Chromium: this
// server's consent page (approve), then the OpenID provider's development
// sign-in (tests/clients/provider.mjs) and its own consent, until the
// browser reaches the client's redirect URI. Used by oauth.mjs, and run
// alone by the Python SDK client's redirect handler (python_oauth.py):
//
//   CHROMIUM=... node tests/clients/sign_in.mjs AUTHORIZATION_URL EXPECTED_CLIENT
//
// which exits 0 once the client's redirect URI was reached and the
// consent page named EXPECTED_CLIENT.
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

// Waits for a loaded two-core machine, never for the assertions' sake.
const WAIT = 60_000;

/** Headless Chromium ($CHROMIUM) with the flags this machine needs. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

/** Signs in at `url` in a fresh browser context; the consent page's text
 * (and its picture in `picture`, when given). */
export async function signInAs(browser, url, picture) {
  const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  try {
    await page.goto(url.toString());
    await page.getByRole("heading", { name: "Allow access to this MCP server?" }).waitFor();
    const shown = await page.textContent("body");
    if (picture) await page.screenshot({ path: picture });
    await page.getByRole("button", { name: "Approve" }).click();
    // oidc-provider's development sign-in: any login and password.
    await page.locator("input[name=login]").fill("alice");
    await page.locator("input[name=password]").fill("any password");
    await page.locator("button[type=submit]").click();
    // Its own consent for the authorization server's client, when it asks.
    const consent = page.locator("button[type=submit]");
    if (await consent.count() > 0 && !page.url().includes("/callback")) {
      await consent.first().click().catch(() => {});
    }
    return shown;
  } finally {
    // The client's redirect URI has the code by now, or never will.
    await page.waitForURL(/\/callback\?/, { timeout: WAIT }).catch(() => {});
    await context.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, expected] = process.argv.slice(2);
  const browser = await launch();
  try {
    const shown = await signInAs(browser, new URL(url));
    if (!shown.includes(expected)) {
      console.error(`the consent page did not name ${expected}: ${shown}`);
      process.exitCode = 1;
    }
  } finally {
    await browser.close();
  }
}
