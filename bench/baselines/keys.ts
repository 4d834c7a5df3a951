/**
 * The API key check the same-work baselines do by hand, as a plain server would, with nothing cached:
 * the Bearer token's SHA-256 looked up by the unique index with its organisation and CRM connection in
 * one statement, then revoked, expired, subscription, pilot gate, connection and seat checked.
 */
import { createHash } from "node:crypto"
import type Database from "better-sqlite3"

export interface KeyRow {
  readonly id: string
  readonly org_id: string
  readonly revoked_at: string | null
  readonly expires_at: string | null
  readonly number_sids: string
  readonly subscription_active: number | null
  readonly pilot_open: number | null
  readonly seat_active: number | null
  readonly state: string | null
  readonly account_id: string | null
  readonly permissions: string | null
}

export interface Refusal {
  readonly status: number
  readonly code: string
  readonly message: string
}

export const keyChecker = (db: Database.Database) => {
  const keyByHash = db.prepare(`SELECT k.id, k.org_id, k.revoked_at, k.expires_at, k.number_sids,
      o.subscription_active, o.pilot_open, o.seat_active, c.state, c.account_id, c.permissions
    FROM api_keys k LEFT JOIN organisations o ON o.id = k.org_id LEFT JOIN crm_connections c ON c.org_id = k.org_id
    WHERE k.hash = ?`)
  return (authorization: string | undefined): KeyRow | Refusal => {
    if (authorization === undefined || !authorization.startsWith("Bearer ")) {
      return { status: 401, code: "UNAUTHORIZED", message: "Missing API key." }
    }
    const hash = createHash("sha256").update(authorization.slice(7)).digest("hex")
    const key = keyByHash.get(hash) as KeyRow | undefined
    if (key === undefined || key.revoked_at !== null || (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now())) {
      return { status: 401, code: "UNAUTHORIZED", message: "The API key is not valid." }
    }
    if (key.subscription_active !== 1 || key.pilot_open !== 1 || key.state !== "connected" || key.seat_active !== 1) {
      return { status: 403, code: "FORBIDDEN", message: "The organisation may not use the API now." }
    }
    return key
  }
}

export const isRefusal = (checked: KeyRow | Refusal): checked is Refusal => "status" in checked
