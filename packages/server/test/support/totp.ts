/**
 * An authenticator app for the tests: RFC 6238 codes (HMAC-SHA1, 30-second steps, 6 digits) computed here
 * with node:crypto from the base32 secret the page shows — not with the server's own code. A server takes a
 * code from the step either side of now and each step once, in order (a step after the last one used), so
 * `nextCode` hands out steps in order starting from the step before now: three codes in a row without waiting
 * (now − 1, now, now + 1), the clock waited for only from the fourth within one step.
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

/**
 * How long a code handed out must stay within the server's window: the time the test may take to type it and
 * the server to read it, on a loaded machine.
 */
const VALID_FOR_MS = 10_000

/** One administrator's app: the steps it has given out, in order. */
export class Authenticator {
  private last = -1
  constructor(readonly secret: string) {}

  /**
   * A code for a step after every one given out: the earliest that the server still takes `VALID_FOR_MS` from
   * now (a step is taken until the end of the step after it), waiting for the clock (at most ~30 s) when it
   * is more than one step ahead of now.
   */
  async nextCode(): Promise<string> {
    const step = Math.max(this.last + 1, Math.floor((Date.now() + VALID_FOR_MS) / 30_000) - 1)
    while (step > stepNow() + 1) await new Promise((resolve) => setTimeout(resolve, 250))
    this.last = step
    return codeAtStep(this.secret, step)
  }

  /** The code of the step given out last (a replay). */
  lastCode(): string {
    return codeAtStep(this.secret, this.last)
  }
}
