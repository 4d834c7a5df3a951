/**
 * A new key's secret between the form that made it and the page that shows it (POST-redirect-GET): the form
 * answers with a redirect to `/admin/keys/created?ticket=…`, and that page takes the secret from here, once.
 * Reloading it finds nothing (the secret is gone: "shown once"), and reloading never posts the form again, so
 * never makes a second key. Kept in this process's memory only — never written anywhere — for a few minutes,
 * for the administrator who made it. With several servers behind a balancer the redirect must reach the same
 * one (as the sign-in throttle's memory does); a secret that is not picked up in time is simply lost, and the
 * key can be rolled for a new one.
 */
import { randomBytes } from "node:crypto"

/** Long enough to follow a redirect on a slow connection; short enough that a forgotten secret is dropped. */
const KEEP_MS = 5 * 60 * 1000
/** A bound on memory, whatever happens: the oldest are dropped first. */
const MAX_HELD = 1_000

export interface HeldSecret {
  readonly keyId: string
  readonly token: string
  /** Set by a roll: the replaced key and when it stops working. */
  readonly replaced?: { readonly keyId: string; readonly expiresAt: string | null }
}

interface Held {
  readonly adminId: string
  readonly until: number
  readonly secret: HeldSecret
}

export class ShownOnce {
  private readonly held = new Map<string, Held>()

  /** Holds the secret for `adminId`; the ticket names it in the redirect. */
  put(adminId: string, secret: HeldSecret, now: number = Date.now()): string {
    for (const [ticket, entry] of this.held) if (entry.until <= now) this.held.delete(ticket)
    while (this.held.size >= MAX_HELD) {
      const oldest = this.held.keys().next()
      if (oldest.done === true) break
      this.held.delete(oldest.value)
    }
    const ticket = randomBytes(18).toString("base64url")
    this.held.set(ticket, { adminId, until: now + KEEP_MS, secret })
    return ticket
  }

  /** The secret, removed as it is taken; nothing for another administrator, a second time, or too late. */
  take(adminId: string, ticket: string, now: number = Date.now()): HeldSecret | undefined {
    const entry = this.held.get(ticket)
    if (entry === undefined || entry.adminId !== adminId) return undefined
    this.held.delete(ticket)
    return entry.until > now ? entry.secret : undefined
  }
}
