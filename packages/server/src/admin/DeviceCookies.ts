/**
 * Device cookies (OWASP's "slow down online guessing attacks with device cookies"): a browser that signed
 * in to an email gets a cookie naming that email, signed with a key of this process, so that its later
 * sign-ins to that email are throttled on their own (SignInThrottle) and not with strangers guessing at
 * the same email. The cookie holds a random id and a MAC over the id and the email; the email itself is
 * not in it. The key is made when the process starts: after a restart, or on another replica, a browser
 * is a stranger again until its next sign-in, which costs it only the shared allowances.
 */
import { createHmac, randomBytes } from "node:crypto"
import { Crypto } from "@parley/core/internal"
import type { ConsoleCookie } from "./ConsoleHttp.js"

export const DEVICE_COOKIE = "__Host-parley_device"
const DEVICE_DAYS = 365

export class DeviceCookies {
  private readonly key = randomBytes(32)

  private mac(id: string, email: string): string {
    return createHmac("sha256", this.key).update(`${id}\u0000${email}`).digest("base64url")
  }

  /** A new cookie's value for `email`. */
  issue(email: string): string {
    const id = Crypto.randomBase62(16, 22)
    return `${id}.${this.mac(id, email)}`
  }

  /** The device's id when `value` was issued by this process for `email`; null otherwise. */
  deviceOf(value: string | undefined, email: string): string | null {
    if (value === undefined) return null
    const [id, mac, ...rest] = value.split(".")
    if (id === undefined || mac === undefined || rest.length > 0 || !/^[0-9A-Za-z]{22}$/.test(id)) return null
    return Crypto.constantTimeEqual(mac, this.mac(id, email)) ? id : null
  }
}

export const deviceCookie = (value: string): ConsoleCookie => ({
  name: DEVICE_COOKIE,
  value,
  maxAgeSeconds: DEVICE_DAYS * 24 * 3600
})
