/**
 * An authenticator app for the tests: RFC 6238 codes (HMAC-SHA1, 30-second steps, 6 digits) computed here
 * with node:crypto from the base32 secret the page shows — not with the server's own code. A server accepts
 * each step once, so `nextCode` hands out steps in order, waiting for the clock when the next one is more
 * than a step ahead of now (the server takes one step either side).
 */
import { createHmac } from "node:crypto"

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

const base32Bytes = (text: string): Buffer => {
  const clean = text.replace(/[\s=]/g, "").toUpperCase()
  let bits = 0
  let value = 0
  const out: Array<number> = []
  for (const char of clean) {
    const index = ALPHABET.indexOf(char)
    if (index === -1) throw new Error(`not base32: ${char}`)
    value = (value << 5) | index
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

export const stepNow = (): number => Math.floor(Date.now() / 30_000)

export const codeAtStep = (secret: string, step: number): string => {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(step))
  const mac = createHmac("sha1", base32Bytes(secret)).update(counter).digest()
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f
  const binary = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000
  return String(binary).padStart(6, "0")
}

/** One administrator's app: the steps it has given out, in order. */
export class Authenticator {
  private last = -1
  constructor(readonly secret: string) {}

  /** A code for a step after every one given out, waiting (at most ~30 s) until it is within the step either side of now that the server takes. */
  async nextCode(): Promise<string> {
    let step = Math.max(this.last + 1, stepNow())
    while (step > stepNow() + 1) await new Promise((resolve) => setTimeout(resolve, 250))
    this.last = step
    return codeAtStep(this.secret, step)
  }

  /** The code of the step given out last (a replay). */
  lastCode(): string {
    return codeAtStep(this.secret, this.last)
  }
}
