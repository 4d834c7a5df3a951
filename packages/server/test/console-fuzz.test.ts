/**
 * Property-based fuzzing of the admin console's routes, signed in, on both stores (issue 35, 19): every page
 * and form answered with junk query values and form fields (non-numeric and out-of-range ids, unicode, SQL,
 * very long text) is answered in time and never with a 5xx. Postgres answered
 * `/admin/activity/record?kind=message&id=abc` with a 500 (22P02) where SQLite found nothing.
 *
 * A fixed seed and PARLEY_CONSOLE_FUZZ_RUNS cases (default 150, a few seconds: it runs in `pnpm test`);
 * raise it for a long run, PARLEY_FUZZ_SEED to explore other seeds.
 */
import { fc, test } from "@fast-check/vitest"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConsoleSession, consoleGet, consolePost, signIn } from "./support/console.js"
import { TestServer } from "./support/server.js"

const RUNS = Number(process.env["PARLEY_CONSOLE_FUZZ_RUNS"] ?? "150")
const SEED = Number(process.env["PARLEY_FUZZ_SEED"] ?? "20261127")
const PASSWORD = "a long passphrase for the fuzzer"

/** The console's pages (GET) and forms (POST), as ConsoleRoutes lists them; signing in and out left out. */
const PAGES = [
  "/admin/keys",
  "/admin/keys/new",
  "/admin/keys/revoke",
  "/admin/keys/key",
  "/admin/keys/created",
  "/admin/crm",
  "/admin/providers",
  "/admin/rules",
  "/admin/events",
  "/admin/events/delete",
  "/admin/activity",
  "/admin/activity/record",
  "/admin/activity/conversation",
  "/admin/set-password"
] as const
const FORMS = [
  "/admin/keys/new",
  "/admin/keys/revoke",
  "/admin/keys/edit",
  "/admin/keys/roll",
  "/admin/crm/connect",
  "/admin/crm/zoho",
  "/admin/providers/set",
  "/admin/providers/clear",
  "/admin/rules",
  "/admin/events/add",
  "/admin/events/rotate",
  "/admin/events/disable",
  "/admin/events/enable",
  "/admin/events/delete",
  "/admin/set-password"
] as const
const NAMES = ["kind", "id", "status", "number", "cursor", "token", "name", "scopes", "mode", "url", "provider", "email", "q", "after", "overlap", "ticket"] as const

/** Values that have broken a store or a parser somewhere: ids that are not ids, numbers past BIGINT, junk. */
const junk = fc.oneof(
  fc.constantFrom(
    "abc", "1.5", "[]", "{}", "-1", "0", "00", "1e3", " 1", "1 ", "null", "9223372036854775807",
    "9223372036854775808", "9999999999999999999", "99999999999999999999999", "' OR 1=1 --", "ai_call", "message",
    "Sent", "%", "\u00e9", "😀", "\u202e", "x".repeat(5_000)
  ),
  fc.string({ maxLength: 40 }),
  fc.nat().map(String)
)

describe("admin console fuzz (issue 35, 19)", () => {
  let server: TestServer
  let session: ConsoleSession
  /** The statuses seen, to show the fuzz got past the session and CSRF checks. */
  const statuses = new Map<string, number>()
  const seen = (what: string, status: number) => statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1)

  beforeAll(async () => {
    server = await TestServer.start()
    const demo = await server.demo()
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "fuzz@demo.example", "--password-stdin"], {
      input: `${PASSWORD}\n`
    })
    expect(created.code, created.stderr).toBe(0)
    session = await signIn(server.baseUrl, "fuzz@demo.example", PASSWORD)
  }, 180_000)
  afterAll(() => server?.dispose())

  it("a record id that is not one is a 404, on both stores", async () => {
    for (const kind of ["message", "ai_call"]) {
      for (const id of ["abc", "1.5", "[]", "", "9999999999999999999", "-3"]) {
        const response = await consoleGet(server.baseUrl, session, `/admin/activity/record?kind=${kind}&id=${encodeURIComponent(id)}`)
        expect(response.status, `${kind} ${id}`).toBe(404)
        await response.body?.cancel()
      }
    }
  })

  const query = fc.array(fc.tuple(fc.constantFrom(...NAMES), junk), { maxLength: 4 })

  test.prop([fc.constantFrom(...PAGES), query], { numRuns: RUNS, seed: SEED, endOnFailure: true })(
    "pages: junk queries never answer a 5xx",
    async (path, params) => {
      const response = await consoleGet(server.baseUrl, session, `${path}?${new URLSearchParams(params).toString()}`)
      const text = await response.text()
      seen("page", response.status)
      expect(response.status, `${path}?${new URLSearchParams(params).toString().slice(0, 200)}: ${text.slice(0, 200)}`).toBeLessThan(500)
    },
    Math.max(120_000, RUNS * 1_000)
  )

  test.prop([fc.constantFrom(...FORMS), query], { numRuns: RUNS, seed: SEED, endOnFailure: true })(
    "forms: junk fields (with the session's CSRF token) never answer a 5xx",
    async (path, fields) => {
      const response = await consolePost(server.baseUrl, session, path, { csrf: session.csrf, ...Object.fromEntries(fields) })
      const text = await response.text()
      seen("form", response.status)
      expect(response.status, `${path} ${JSON.stringify(fields).slice(0, 200)}: ${text.slice(0, 200)}`).toBeLessThan(500)
    },
    Math.max(120_000, RUNS * 1_000)
  )

  it("reaches the pages and forms: signed in, past the CSRF check", () => {
    const counts = Object.fromEntries(statuses)
    expect(counts["page 200"] ?? 0, JSON.stringify(counts)).toBeGreaterThan(0)
    // A form with a bad CSRF token or no session is a 403 or a redirect to sign in; these are handled.
    const handled = [...statuses].filter(([what]) => what.startsWith("form") && !/ 403$/.test(what)).length
    expect(handled, JSON.stringify(counts)).toBeGreaterThan(0)
  })
})
