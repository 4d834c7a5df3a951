/**
 * Event deliveries connect only to allowed addresses, decided on the address
 * each connection resolves to (WebhookPost): names that resolve to a metadata
 * service (`169.254.169.254.nip.io`), an answer that changes between two
 * deliveries (DNS rebinding), IPv4-mapped and IPv4-compatible IPv6 literals,
 * and private networks outside the operator's allow-list. The resolver is a
 * stand-in (no DNS leaves the machine); the receiver is real, on loopback.
 */
import type { LookupAddress } from "node:dns"
import { createServer, type Server } from "node:http"
import { WebhookAddresses } from "@parley/core/internal"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postWebhook, type Resolve } from "../src/events/WebhookPost.js"

const networks = (text: string): WebhookAddresses.AllowedNetworks =>
  Either.getOrThrow(WebhookAddresses.parseAllowedNetworks(text))

/** A resolver answering from a script of answers per name, one per lookup (the last repeats). */
const scripted = (answers: Record<string, ReadonlyArray<ReadonlyArray<string>>>) => {
  const asked: Array<string> = []
  const resolve: Resolve = (hostname, callback) => {
    asked.push(hostname)
    const script = answers[hostname]
    const turn = script?.[Math.min(asked.filter((h) => h === hostname).length - 1, (script?.length ?? 1) - 1)]
    if (turn === undefined) return callback(Object.assign(new Error("not found"), { code: "ENOTFOUND" }), [])
    const addresses: Array<LookupAddress> = turn.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))
    callback(null, addresses)
  }
  return { resolve, asked }
}

describe("webhook deliveries: the address connected to", () => {
  let receiver: Server
  let port = 0
  let received = 0

  beforeAll(async () => {
    receiver = createServer((_req, res) => {
      received++
      res.writeHead(200).end()
    })
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", () => resolve()))
    const address = receiver.address()
    port = typeof address === "object" && address !== null ? address.port : 0
  })
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())))

  const post = (url: string, allowed: WebhookAddresses.AllowedNetworks, resolve?: Resolve) =>
    postWebhook(url, { headers: { "content-type": "application/json" }, body: "{}", allowed, timeoutMs: 5_000, resolve })

  it("refuses a name that resolves to the metadata service, without connecting", async () => {
    const before = received
    const { resolve } = scripted({ "169.254.169.254.nip.io": [["169.254.169.254"]] })
    const result = await post(`http://169.254.169.254.nip.io:${port}/`, networks("0.0.0.0/0"), resolve)
    expect(result).toMatchObject({ _tag: "Refused" })
    expect(result._tag === "Refused" ? result.reason : "").toMatch(/169\.254\.169\.254 is a linkLocal address/)
    expect(received).toBe(before)
  })

  it("decides on each connection: a name that rebinds to the metadata service after a first delivery is refused", async () => {
    const before = received
    const { asked, resolve } = scripted({ "hooks.example.test": [["127.0.0.1"], ["169.254.169.254"]] })
    const allowed = networks("127.0.0.1/32")
    const first = await post(`http://hooks.example.test:${port}/`, allowed, resolve)
    expect(first).toMatchObject({ _tag: "Answered", status: 200 })
    // A fresh connection (the first was not kept: the receiver's answer ends it) resolves again.
    const second = await postWebhook(`http://hooks.example.test:${port}/`, {
      headers: { connection: "close" },
      body: "{}",
      allowed,
      timeoutMs: 5_000,
      resolve
    })
    expect(second).toMatchObject({ _tag: "Refused" })
    expect(asked.filter((h) => h === "hooks.example.test").length).toBeGreaterThanOrEqual(2)
    expect(received).toBe(before + 1)
  })

  it("uses only the allowed addresses of an answer that mixes them", async () => {
    const { resolve } = scripted({ "mixed.example.test": [["169.254.169.254", "10.1.2.3", "127.0.0.1"]] })
    const result = await post(`http://mixed.example.test:${port}/`, networks("127.0.0.0/8"), resolve)
    expect(result).toMatchObject({ _tag: "Answered", status: 200 })
  })

  it("refuses loopback reached through IPv4-mapped or -compatible IPv6, and by name, unless the operator lists it", async () => {
    const before = received
    const { resolve } = scripted({ localhost: [["127.0.0.1"]] })
    for (const url of [
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::ffff:7f00:1]:${port}/`,
      `http://[::127.0.0.1]:${port}/`,
      `http://127.0.0.1:${port}/`,
      `http://localhost:${port}/`
    ]) {
      const result = await post(url, WebhookAddresses.NO_NETWORKS, resolve)
      expect(result, url).toMatchObject({ _tag: "Refused" })
      expect(result._tag === "Refused" ? result.reason : "", url).toMatch(/loopback address, which PARLEY_WEBHOOK_ALLOWED_NETWORKS does not list/)
    }
    expect(received).toBe(before)
    expect(await post(`http://[::ffff:127.0.0.1]:${port}/`, networks("127.0.0.0/8"), resolve)).toMatchObject({
      _tag: "Answered",
      status: 200
    })
  })

  it("never allows link-local or metadata addresses, even when the operator lists everything", async () => {
    const everything = networks("0.0.0.0/0,::/0")
    for (const url of [
      "http://169.254.169.254/",
      "http://[::ffff:169.254.169.254]/",
      "http://[::169.254.169.254]/",
      "http://[fe80::1]/",
      "http://[fd00:ec2::254]/",
      "http://100.100.100.200/",
      "http://metadata.google.internal/"
    ]) {
      expect(await post(url, everything), url).toMatchObject({ _tag: "Refused" })
    }
  })

  it("parses the operator's allow-list, and says what is wrong with a bad one", () => {
    expect(WebhookAddresses.parseAllowedNetworks("127.0.0.0/8, ::1/128").pipe(Either.map((n) => n.cidrs.length)))
      .toEqual(Either.right(2))
    expect(Either.isLeft(WebhookAddresses.parseAllowedNetworks("10.0.0.0"))).toBe(true)
    expect(Either.isLeft(WebhookAddresses.parseAllowedNetworks("localhost/8"))).toBe(true)
  })
})
