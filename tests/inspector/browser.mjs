// What the Inspector scripts share: headless Chromium on the page the
// checks drive, and `ok`/`FAILED` lines with a screenshot of each failure.
import { chromium } from "playwright-core";

// A user's clicks wait for the server; on a loaded two-core machine a
// debug build's answer can take seconds, so waits are generous, never tight.
export const WAIT = { timeout: 60_000 };

/** $CHROMIUM on a fresh page; `check(name, steps)` runs and counts a check
 * (labelled `label`), `finish(summary)` prints the count and exits. */
export async function session(outDir, label) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    // The flags headless Chromium needs as root on a machine without a
    // network beyond loopback (no background connections to refuse).
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(WAIT.timeout);
  let passed = 0;
  let failed = 0;
  const check = async (name, steps) => {
    try {
      await steps();
      passed += 1;
      console.log(`ok - ${label}: ${name}`);
    } catch (error) {
      failed += 1;
      const shot = `${outDir}/${name.replace(/[^a-z0-9]+/gi, "-")}.png`;
      await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
      console.log(`FAILED - ${label}: ${name}: ${String(error.message ?? error).split("\n")[0]} (screenshot: ${shot})`);
    }
  };
  const finish = async (summary) => {
    await browser.close();
    console.log(`${summary}: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  };
  return { page, check, finish };
}
