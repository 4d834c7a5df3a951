// The webhook address policy's edges (issue 35, 21): cloud platforms' internal hosts on public-looking
// addresses are refused like link-local, however they are spelt and whatever the operator allows.
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { WebhookAddresses } from "../src/internal.js"

const everything = Either.getOrThrow(WebhookAddresses.parseAllowedNetworks("0.0.0.0/0, ::/0"))

describe("webhook addresses: cloud platforms' internal hosts", () => {
  it("168.63.129.16 (Azure's WireServer) and 192.0.0.192 (Oracle Cloud's metadata) are never receivers", () => {
    for (const text of ["168.63.129.16", "[::ffff:168.63.129.16]", "::ffff:a83f:8110", "64:ff9b::a83f:8110", "192.0.0.192"]) {
      expect(WebhookAddresses.classify(text), text).toBe("never")
      const why = WebhookAddresses.refusal(everything, text)
      expect(why, text).not.toBeNull()
    }
    expect(WebhookAddresses.refusal(everything, "168.63.129.16")).toContain("cloud platform's internal host")
  })

  it("their neighbours stay what they were: public, and private where reserved", () => {
    expect(WebhookAddresses.classify("168.63.129.17")).toBe("public")
    expect(WebhookAddresses.classify("168.63.129.15")).toBe("public")
    expect(WebhookAddresses.refusal(WebhookAddresses.NO_NETWORKS, "168.63.129.17")).toBeNull()
    expect(WebhookAddresses.classify("192.0.0.193")).toBe("private")
  })
})
