/**
 * Debian's Chromium for the console's browser tests, driven by playwright-core (which downloads no browser
 * of its own). Missing, it is installed with apt-get (the test machines are Debian and run as root); when
 * that cannot be done the browser tests are skipped with one loud line, except under CI=true, where that
 * is a failure: a green CI must mean the console was tested in a browser.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"

export const CHROMIUM = "/usr/bin/chromium"

/** Headless, no sandbox (root in a container), no GPU, nothing fetched in the background. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-default-apps",
  "--disable-sync",
  "--metrics-recording-only",
  "--no-first-run",
  "--disable-features=Translate,MediaRouter,OptimizationHints"
]

export type ChromiumPlan = { readonly kind: "ready"; readonly path: string } | { readonly kind: "missing"; readonly reason: string }

export const findChromium = (): ChromiumPlan => {
  if (existsSync(CHROMIUM)) return { kind: "ready", path: CHROMIUM }
  const install = () =>
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { stdio: "ignore", timeout: 600_000 })
  try {
    try {
      install()
    } catch {
      // A fresh machine has no package lists yet.
      execFileSync("apt-get", ["update"], { stdio: "ignore", timeout: 600_000 })
      install()
    }
  } catch (error) {
    return { kind: "missing", reason: `apt-get install chromium failed (${error instanceof Error ? error.message.split("\n")[0] : String(error)})` }
  }
  return existsSync(CHROMIUM) ? { kind: "ready", path: CHROMIUM } : { kind: "missing", reason: `${CHROMIUM} not found after apt-get` }
}
