/**
 * The console's sign-in under bursts, over real HTTP on both stores: attempts counted as they arrive,
 * before any hashing (12 wrong passwords at once for one email: 5 checked; 40 from one address: 20), a
 * per-client count (the right password from another client, or from a browser that signed in before,
 * still signs in), 429 with Retry-After, and a bounded queue for the hashing (refused with 503 beyond it).
 * Each client is a distinct loopback address (127.0.0.x), which Linux routes to the server like any other.
 */
import { request } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

const PASSWORD = "the administrator's long passphrase"

interface Answer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly cookies: ReadonlyArray<string>
}

/** POST /admin/sign-in from `from` (a local address), with an optional Cookie header. */
const signInFrom = (
  port: number,
  from: string,
  email: string,
  password: string,
  cookie?: string,
  extra: Record<string, string> = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const body = new URLSearchParams({ email, password }).toString()
    const sent = request({
      host: "127.0.0.1",
      port,
      localAddress: from,
      method: "POST",
      path: "/admin/sign-in",
      agent: false,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "content-length": String(Buffer.byteLength(body)),
        ...(cookie === undefined ? {} : { cookie }),
        ...extra
      }
    }, (response) => {
      response.resume()
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          retryAfter: response.headers["retry-after"],
          cookies: response.headers["set-cookie"] ?? []
        }))
    })
    sent.on("error", reject)
    sent.end(body)
  })

const tally = (answers: ReadonlyArray<Answer>) => {
  const counts: Record<number, number> = {}
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1
  return counts
}

describe("sign-in throttling under bursts", () => {
  let server: TestServer
  let demo: DemoSummary
  let port: number

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    port = Number(new URL(server.baseUrl).port)
    for (const email of ["ada@throttle.example", "grace@throttle.example"]) {
      const created = await server.cli(["admins", "create", demo.orgId, "--email", email, "--password-stdin"], {
        input: `${PASSWORD}\n`
      })
      expect(created.code, created.stderr).toBe(0)
    }
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
  })

  it("12 wrong passwords at once for one email: 5 are checked, 7 answered 429 with Retry-After; another client still signs in", async () => {
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signInFrom(port, "127.0.0.2", "ada@throttle.example", `wrong guess ${i}`))
    )
    expect(tally(burst)).toEqual({ 401: 5, 429: 7 })
    for (const held of burst.filter((answer) => answer.status === 429)) {
      expect(Number(held.retryAfter)).toBeGreaterThan(0)
      expect(Number(held.retryAfter)).toBeLessThanOrEqual(30)
    }
    // The guesser's client waits, even with the right password…
    expect((await signInFrom(port, "127.0.0.2", "ada@throttle.example", PASSWORD)).status).toBe(429)
    // …but the administrator's own client is not held by it.
    const own = await signInFrom(port, "127.0.0.3", "ada@throttle.example", PASSWORD)
    expect(own.status).toBe(303)
    expect(own.cookies.map((cookie) => cookie.split("=")[0])).toEqual(["__Host-parley_admin", "__Host-parley_device"])
  }, 120_000)

  it("a browser that signed in before is trusted: a guesser at the same address does not hold it back", async () => {
    const first = await signInFrom(port, "127.0.0.4", "grace@throttle.example", PASSWORD)
    expect(first.status).toBe(303)
    const device = first.cookies.find((cookie) => cookie.startsWith("__Host-parley_device="))?.split(";")[0]
    expect(device).toBeDefined()
    const guesses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => signInFrom(port, "127.0.0.4", "grace@throttle.example", `wrong guess ${i}`))
    )
    expect(tally(guesses)).toEqual({ 401: 5, 429: 3 })
    expect((await signInFrom(port, "127.0.0.4", "grace@throttle.example", PASSWORD)).status).toBe(429)
    expect((await signInFrom(port, "127.0.0.4", "grace@throttle.example", PASSWORD, device)).status).toBe(303)
    // A device cookie names one email: it does not open another email's own count.
    const forged = `__Host-parley_device=${"A".repeat(22)}.${"B".repeat(43)}`
    expect((await signInFrom(port, "127.0.0.4", "grace@throttle.example", PASSWORD, forged)).status).toBe(429)
  }, 120_000)

  it("40 wrong passwords at once from one address across 40 emails: 20 are counted, 20 answered 429", async () => {
    const burst = await Promise.all(
      Array.from({ length: 40 }, (_, i) => signInFrom(port, "127.0.0.5", `guess-${i}@throttle.example`, "a wrong password"))
    )
    const counts = tally(burst)
    expect(counts[429]).toBe(20)
    // The other 20 were checked, or refused by the hashing queue when it was full (below).
    expect((counts[401] ?? 0) + (counts[503] ?? 0)).toBe(20)
  }, 120_000)

  it("hashing is queued with a limit: past it a sign-in is refused at once with 503 and Retry-After", async () => {
    const started = performance.now()
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) => signInFrom(port, `127.0.1.${i + 1}`, `queue-${i}@throttle.example`, "a wrong password"))
    )
    const busy = burst.filter((answer) => answer.status === 503)
    expect(busy.length).toBeGreaterThan(0)
    for (const answer of busy) expect(answer.retryAfter).toBe("1")
    expect(burst.every((answer) => answer.status === 401 || answer.status === 503)).toBe(true)
    // Once the queue has drained, the right password goes through.
    expect((await signInFrom(port, "127.0.1.200", "ada@throttle.example", PASSWORD)).status).toBe(303)
    expect(performance.now() - started).toBeLessThan(60_000)
  }, 120_000)
})

describe("client addresses behind a proxy (PARLEY_TRUSTED_PROXIES) and the Origin check (PARLEY_PUBLIC_URL)", () => {
  let server: TestServer
  let port: number
  const PROXY = "127.0.0.9"

  beforeAll(async () => {
    server = await TestServer.start({
      env: { PARLEY_TRUSTED_PROXIES: `${PROXY}/32, 10.0.0.0/8`, PARLEY_PUBLIC_URL: "https://console.example.test" }
    })
    const demo = await server.demo()
    port = Number(new URL(server.baseUrl).port)
    const created = await server.cli(["admins", "create", demo.orgId, "--email", "ada@proxy.example", "--password-stdin"], {
      input: `${PASSWORD}\n`
    })
    expect(created.code, created.stderr).toBe(0)
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
  })

  it("through a trusted proxy each forwarded client is throttled on its own; from anyone else the header is ignored", async () => {
    const guesser = { "x-forwarded-for": "203.0.113.5, 10.1.2.3" }
    const guesses = []
    for (let i = 0; i < 6; i++) {
      guesses.push((await signInFrom(port, PROXY, "ada@proxy.example", `wrong ${i}`, undefined, guesser)).status)
    }
    expect(guesses).toEqual([401, 401, 401, 401, 401, 429])
    // The administrator behind the same proxy, from their own address, signs in.
    const own = await signInFrom(port, PROXY, "ada@proxy.example", PASSWORD, undefined, { forwarded: "for=198.51.100.7;proto=https" })
    expect(own.status).toBe(303)
    // A client that is not a proxy cannot pick its address with the header.
    const spoofed = []
    for (let i = 0; i < 6; i++) {
      spoofed.push((await signInFrom(port, "127.0.0.10", "ada@proxy.example", `wrong ${i}`, undefined, {
        "x-forwarded-for": `203.0.113.${100 + i}`
      })).status)
    }
    expect(spoofed).toEqual([401, 401, 401, 401, 401, 429])
  }, 120_000)

  it("a form post is same-origin when its Origin is PARLEY_PUBLIC_URL's, whatever Host the proxy forwarded", async () => {
    const fromConsole = await signInFrom(port, "127.0.0.11", "ada@proxy.example", PASSWORD, undefined, {
      origin: "https://console.example.test",
      host: "parley-internal:8787"
    })
    expect(fromConsole.status).toBe(303)
    const crossSite = await signInFrom(port, "127.0.0.11", "ada@proxy.example", PASSWORD, undefined, {
      origin: "https://evil.example",
      host: "console.example.test"
    })
    expect(crossSite.status).toBe(403)
  }, 60_000)
})
