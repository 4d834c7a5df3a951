/**
 * Conversation ids and cursors are encrypted: nothing of the phone numbers they
 * name can be read from them, they are bound to their organisation, any edit
 * is refused, the same conversation keeps the same id, and ids issued before
 * the encryption (signed JSON) still open.
 */
import { Option, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as Cursors from "../src/domain/Cursors.js"
import { hmacBase64Url } from "../src/domain/Crypto.js"

const Key = Schema.Struct({ l: Schema.String, p: Schema.String })
const payload = { l: "+14155550100", p: "+14155550123" }

describe("Cursors (sealed tokens)", () => {
  const sealer = Cursors.make("test-secret")

  it("reveals no phone number, in the token or in any decoding of it", () => {
    const token = sealer.seal("org_a", payload)
    for (const text of [token, Buffer.from(token, "base64url").toString("latin1"), Buffer.from(token, "base64").toString("latin1")]) {
      expect(text).not.toMatch(/4155550/)
    }
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/)
  })

  it("opens for its organisation only, and refuses any edit", () => {
    const token = sealer.seal("org_a", payload)
    expect(sealer.open("org_a", token, Key)).toEqual(Option.some(payload))
    expect(sealer.open("org_b", token, Key)).toEqual(Option.none())
    expect(Cursors.make("other-secret").open("org_a", token, Key)).toEqual(Option.none())
    for (let i = 0; i < token.length; i++) {
      const flipped = token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1)
      if (flipped !== token) expect(sealer.open("org_a", flipped, Key), `edit at ${i}`).toEqual(Option.none())
    }
    for (const extra of ["x", "=", " ", "!"]) expect(sealer.open("org_a", `${token}${extra}`, Key)).toEqual(Option.none())
    expect(sealer.open("org_a", "", Key)).toEqual(Option.none())
    expect(sealer.open("org_a", "short", Key)).toEqual(Option.none())
  })

  it("gives the same conversation the same id (deterministic), and different ones different ids", () => {
    expect(sealer.seal("org_a", payload)).toBe(Cursors.make("test-secret").seal("org_a", payload))
    expect(sealer.seal("org_a", payload)).not.toBe(sealer.seal("org_a", { ...payload, p: "+14155550124" }))
    expect(sealer.seal("org_a", payload)).not.toBe(sealer.seal("org_b", payload))
  })

  it("still opens a token issued signed, before tokens were encrypted", () => {
    const body = Buffer.from(JSON.stringify(payload)).toString("base64url")
    const legacy = `${body}.${hmacBase64Url("test-secret", `org_a.${body}`).slice(0, 22)}`
    expect(sealer.open("org_a", legacy, Key)).toEqual(Option.some(payload))
    expect(sealer.open("org_b", legacy, Key)).toEqual(Option.none())
  })
})
