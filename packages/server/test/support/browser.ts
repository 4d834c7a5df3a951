/**
 * What every console suite in Chromium sets up, in one place: whether the file runs on this pass (Chromium
 * found, or the pass's store one the file skips), one Chromium per test worker, a page in a context of its
 * own (its own cookies) on a server, axe-core on a page state, and a sign-in through the form.
 *
 * One Chromium per worker, not per file: the suite runs with `isolate: false` (vitest.config.ts), so this
 * module, and the browser it launched, stay loaded from one file to the next in a worker; each file opens its
 * own contexts and closes them (`closePages`), so no cookie or page crosses files. Playwright stops the
 * browsers it launched when the worker exits.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { CHROMIUM_ARGS, type ChromiumPlan, findChromium } from "./chromium.js"

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

export const onSqlite = process.env["PARLEY_TEST_STORE"] !== "postgres"

/**
 * Whether `what` (the file's browser tests) runs on this pass. `sqliteOnly` files skip the Postgres pass
 * quietly (their reason is in the file and in docs/development.md); a missing Chromium skips with one loud line,
 * except under CI=true, where it fails the file: a green CI must mean the console was tested in a browser.
 */
export const chromiumPlan = (what: string, options: { readonly sqliteOnly?: boolean } = {}): ChromiumPlan => {
  if (options.sqliteOnly === true && !onSqlite) return { kind: "missing", reason: "the browser scenario runs on the SQLite pass" }
  const plan = findChromium()
  if (plan.kind === "missing") {
    if (process.env["CI"] === "true") throw new Error(`The console's browser tests need Chromium: ${plan.reason}`)
    process.stderr.write(`\n*** SKIPPED: ${what}: ${plan.reason} ***\n\n`)
  }
  return plan
}

let launched: Promise<Browser> | undefined

/** This worker's Chromium, launched by the first file that asks (again if it was closed or crashed). */
export const sharedChromium = async (plan: ChromiumPlan): Promise<Browser> => {
  if (plan.kind !== "ready") throw new Error(`no Chromium: ${plan.reason}`)
  const current = launched === undefined ? undefined : await launched.catch(() => undefined)
  if (current?.isConnected() === true) return current
  const next = chromium.launch({ executablePath: plan.path, headless: true, args: CHROMIUM_ARGS })
  launched = next
  return next
}

/** The contexts a file opened, closed together at its end. */
const opened = new Set<BrowserContext>()

/**
 * A page 1280 × 900 in a new context (own cookies and storage) whose relative URLs go to `baseURL`; waits up
 * to 90 s (the machines are shared and sometimes saturated).
 * `session`, a console session's cookie (`name=value`, from support/console.ts's `signIn` over HTTP), starts
 * the page signed in, for files whose subject is not the sign-in form.
 */
export const openPage = async (
  browser: Browser,
  baseURL: string,
  options: { readonly session?: string } = {}
): Promise<Page> => {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 900 } })
  opened.add(context)
  context.once("close", () => opened.delete(context))
  if (options.session !== undefined) {
    const [name = "", value = ""] = options.session.split("=")
    // The session cookie is `__Host-` prefixed: Secure, Path=/, no Domain (Chromium keeps it on loopback http).
    const domain = new URL(baseURL).hostname
    await context.addCookies([{ name, value, domain, path: "/", secure: true, httpOnly: true, sameSite: "Lax" }])
  }
  const page = await context.newPage()
  page.setDefaultTimeout(90_000)
  return page
}

/** Closes every context this file opened (the browser stays, for the worker's next file). */
export const closePages = async (): Promise<void> => {
  await Promise.all([...opened].map((context) => context.close().catch(() => undefined)))
  opened.clear()
}

export interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: number
  readonly page: string
}

/** axe-core over page states: the names audited, and the serious or critical violations found. */
export class Axe {
  readonly audited: Array<string> = []
  readonly violations: Array<Violation> = []

  async check(page: Page, name: string): Promise<void> {
    // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
    await page.evaluate(AXE_SOURCE)
    const found = (await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length })))"
    )) as ReadonlyArray<Omit<Violation, "page">>
    this.audited.push(name)
    this.violations.push(...found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({ ...v, page: name })))
  }
}

/** Types the email and password into the sign-in form and submits it; `landing`, when given, is waited for. */
export const signInWithForm = async (page: Page, email: string, password: string, landing?: string): Promise<void> => {
  await page.goto("/admin/sign-in")
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
  if (landing !== undefined) await page.getByRole("heading", { name: landing }).waitFor()
}
