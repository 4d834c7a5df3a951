/**
 * What the Zoho suites share: the Zoho fake, a Parley server pointed at it as the Zoho client, the demo
 * organisation, the consent flow run through the admin CLI (`crm connect`, Zoho's redirect, Parley's
 * callback page), `crm setup`, and a live text sent over HTTP. Each suite keeps its own assertions and
 * its own extra environment.
 */
import { expect } from "vitest"
import { ZohoFake } from "./fakes/ZohoFake.js"
import { type CliResult, type DemoSummary, TestServer } from "./server.js"
import type { TestDatabase } from "./store.js"

/** The demo organisation's first number (the simulator's). */
export const PN1 = "PN00000000000000000000000000000001"
/** Every Zoho suite's timeout for set-up and each case. */
export const HEAVY = 180_000

/** The server's environment for `zoho` as the Zoho client, with a suite's own additions. */
export const zohoEnv = (zoho: ZohoFake, extra: Record<string, string> = {}): Record<string, string> => ({
  PARLEY_ZOHO_CLIENT_ID: zoho.clientId,
  PARLEY_ZOHO_CLIENT_SECRET: zoho.clientSecret,
  PARLEY_ZOHO_ACCOUNTS_URL: zoho.url,
  ...extra
})

/** A CLI run that must succeed: its output, or an error naming the command and what it printed. */
export const adminOk = async (server: TestServer, args: ReadonlyArray<string>): Promise<CliResult> => {
  const result = await server.admin(args)
  if (result.code !== 0) throw new Error(`parley ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
  return result
}

export interface ConsentAnswer {
  /** The status of Parley's callback page. */
  readonly status: number
  readonly html: string
  /** Where Zoho redirected the browser (Parley's callback URL with `code` and `state`). */
  readonly location: string
}

/** Runs the consent flow for `orgId`: `crm connect`, the consent URL, Zoho's redirect, and the callback's page. */
export const connectZoho = async (server: TestServer, orgId: string, extra: ReadonlyArray<string> = []): Promise<ConsentAnswer> => {
  const started = await server.adminJson<{ url: string }>(["crm", "connect", orgId, "--provider", "zoho", ...extra])
  const consent = await fetch(started.url, { redirect: "manual" })
  const location = consent.headers.get("location")
  if (location === null) throw new Error(`no redirect from the fake: ${consent.status}`)
  const callback = await fetch(location)
  return { status: callback.status, html: await callback.text(), location }
}

/** Connects `orgId` and runs `crm setup`; both must succeed. */
export const connectAndSetUp = async (server: TestServer, orgId: string): Promise<void> => {
  const callback = await connectZoho(server, orgId)
  expect(callback.status, callback.html).toBe(200)
  const setup = await server.admin(["crm", "setup", orgId])
  expect(setup.code, setup.stderr).toBe(0)
}

let counter = 0
/** A fresh Idempotency-Key, named for the suite that sends it. */
export const idempotencyKey = (prefix: string): string => `${prefix}-${Date.now()}-${++counter}`

/** POST /api/v1/messages with `key`: a live text to +14155550123 from the demo's first number unless `body` says otherwise. */
export const sendText = (
  server: TestServer,
  apiKey: string,
  body: Record<string, unknown>,
  idempotency = idempotencyKey("zoho")
): Promise<Response> =>
  server.fetch("/api/v1/messages", {
    key: apiKey,
    method: "POST",
    headers: { "idempotency-key": idempotency },
    body: JSON.stringify({ to: "+14155550123", fromNumberSid: PN1, ...body })
  })

export interface ZohoSuite {
  readonly zoho: ZohoFake
  readonly server: TestServer
  readonly demo: DemoSummary
  readonly dispose: () => Promise<void>
}

/**
 * Starts the fake and a server on it, reads the demo organisation, and — unless told otherwise — connects
 * it and runs `crm setup`. `prepare` runs on the fake before the server starts (users, records, caps).
 */
export const startZohoSuite = async (options: {
  readonly env?: Record<string, string>
  readonly database?: TestDatabase
  readonly connect?: boolean
  readonly prepare?: (zoho: ZohoFake) => void
} = {}): Promise<ZohoSuite> => {
  const zoho = await ZohoFake.start()
  options.prepare?.(zoho)
  const server = await TestServer.start({
    env: zohoEnv(zoho, options.env),
    ...(options.database === undefined ? {} : { database: options.database })
  })
  const demo = await server.demo()
  if (options.connect !== false) await connectAndSetUp(server, demo.orgId)
  return {
    zoho,
    server,
    demo,
    dispose: async () => {
      await server.dispose()
      await zoho.stop()
    }
  }
}
