/**
 * The rules for minting an API key, in one place for the CLI (`parley keys create`) and the console's
 * Developer access page: the organisation's CRM account must be connected (every request runs as it),
 * a name, known scopes, restrictions among the organisation's own numbers and bots, an expiry in the
 * future. A refusal names the field it is about, so each caller shows it where its user gave the value
 * (a flag, a form field). The key itself is made by the core's ApiKeys service, as for everyone.
 * Rolling (a new secret, the old one kept for an overlap) and renaming follow the same rules for both.
 */
import { ALL_SCOPES, ApiKeys, ApiKeyStore, Crm, type KeyMode, OffsetTimestamp, Organisations, type Scope } from "@parley/core/internal"
import { Clock, Data, Duration, Effect, Either, Option, Schema } from "effect"

export type KeyField = "crm" | "name" | "scopes" | "numbers" | "bots" | "expiresAt" | "key" | "overlap"

export class KeyRefused extends Data.TaggedError("KeyRefused")<{ readonly field: KeyField; readonly message: string }> {}

export interface KeyRequest {
  readonly orgId: string
  readonly name: string
  readonly mode: KeyMode
  /** Scope names as given; every one must be a scope. */
  readonly scopes: ReadonlyArray<string>
  readonly numberSids: ReadonlyArray<string>
  readonly botIds: ReadonlyArray<string>
  /** An ISO 8601 timestamp with an offset, or null for no expiry. */
  readonly expiresAt: string | null
}

const decodeTimestamp = Schema.decodeUnknownEither(OffsetTimestamp)

const refuse = (field: KeyField, message: string) => Effect.fail(new KeyRefused({ field, message }))

/** Longest key name: enough to name an integration, short enough for a table cell and an audit entry. */
export const MAX_KEY_NAME = 100

/** A name as kept (trimmed), or why it cannot be one. */
const checkName = (given: string) => {
  const name = given.trim()
  if (name === "") return refuse("name", "Give the key a name to tell it apart.")
  if (name.length > MAX_KEY_NAME) return refuse("name", `A key name has at most ${MAX_KEY_NAME} characters (this one has ${name.length}).`)
  return Effect.succeed(name)
}

const unknownOf = (items: ReadonlyArray<string>, allowed: ReadonlyArray<string>) => items.find((i) => !allowed.includes(i))

export const issueKey = Effect.fn("KeyIssuing.issueKey")(function*(request: KeyRequest) {
  const connection = yield* (yield* Crm.Crm).connection(request.orgId)
  if (connection.state === "disconnected") {
    return yield* refuse("crm", "No CRM account is connected, and every request runs as that account: connect one first.")
  }
  if (connection.state === "identity_changed") {
    return yield* refuse("crm", "The CRM account changed identity: reconnect it first.")
  }
  const name = yield* checkName(request.name)
  if (request.scopes.length === 0) return yield* refuse("scopes", `Choose at least one scope (${ALL_SCOPES.join(", ")}).`)
  const unknownScope = unknownOf(request.scopes, ALL_SCOPES)
  if (unknownScope !== undefined) {
    return yield* refuse("scopes", `Unknown scope "${unknownScope}"; expected ${ALL_SCOPES.join(", ")}.`)
  }
  const scopes = ALL_SCOPES.filter((s: Scope) => request.scopes.includes(s))
  const organisations = yield* Organisations.Organisations
  if (request.numberSids.length > 0) {
    const known = (yield* organisations.listNumbers(request.orgId)).map((n) => n.sid)
    const unknown = unknownOf(request.numberSids, known)
    if (unknown !== undefined) return yield* refuse("numbers", `"${unknown}" is not a number of this organisation.`)
  }
  if (request.botIds.length > 0) {
    const known = (yield* organisations.listBots(request.orgId)).map((b) => b.id)
    const unknown = unknownOf(request.botIds, known)
    if (unknown !== undefined) return yield* refuse("bots", `"${unknown}" is not a bot of this organisation.`)
  }
  let expiresAt: string | null = null
  if (request.expiresAt !== null) {
    if (Either.isLeft(decodeTimestamp(request.expiresAt))) {
      return yield* refuse(
        "expiresAt",
        `"${request.expiresAt}" must be an ISO 8601 timestamp with a timezone offset, such as 2030-01-31T09:30:00Z.`
      )
    }
    expiresAt = new Date(Date.parse(request.expiresAt)).toISOString()
    if (Date.parse(expiresAt) <= (yield* Clock.currentTimeMillis)) {
      return yield* refuse(
        "expiresAt",
        `${request.expiresAt} is not in the future: a key that is already expired could never be used (leave it empty for a key that does not expire).`
      )
    }
  }
  return yield* (yield* ApiKeys.ApiKeys).create({
    orgId: request.orgId,
    name,
    mode: request.mode,
    scopes,
    numberSids: request.numberSids,
    botIds: request.botIds,
    expiresAt
  })
})

/**
 * How long a rolled key's old secret keeps working, as Stripe offers them: at once, or long enough to deploy
 * the new one everywhere. The names are what the console's form and `parley keys roll --overlap` take.
 */
export const ROLL_OVERLAPS = [
  { name: "now", label: "Now", duration: Duration.zero },
  { name: "1h", label: "In 1 hour", duration: Duration.hours(1) },
  { name: "24h", label: "In 24 hours", duration: Duration.hours(24) },
  { name: "7d", label: "In 7 days", duration: Duration.days(7) }
] as const

export type RollOverlap = typeof ROLL_OVERLAPS[number]["name"]

/** The organisation's key that can still be used (not revoked, not expired), or a refusal naming it. */
const usableKey = (orgId: string, keyId: string) =>
  Effect.gen(function*() {
    const found = Option.filter(yield* (yield* ApiKeyStore.ApiKeyStore).get(keyId), (k) => k.orgId === orgId)
    if (Option.isNone(found)) return yield* refuse("key", `"${keyId}" is not a key of this organisation.`)
    const key = found.value
    if (key.revokedAt !== null) return yield* refuse("key", `The key "${key.name}" was revoked: it cannot be rolled or changed.`)
    if (key.expiresAt !== null && Date.parse(key.expiresAt) <= (yield* Clock.currentTimeMillis)) {
      return yield* refuse("key", `The key "${key.name}" has expired: create a new one instead.`)
    }
    return key
  })

/**
 * Rolls a key: a new secret with the same name, mode, scopes, restrictions and expiry, and the old secret
 * expiring after the overlap (never later than it already would). Not refused when the CRM is disconnected:
 * rolling is what an administrator does when a secret leaks, and must never be blocked.
 */
export const rollKey = Effect.fn("KeyIssuing.rollKey")(function*(orgId: string, keyId: string, overlapName: string) {
  const overlap = ROLL_OVERLAPS.find((o) => o.name === overlapName)
  if (overlap === undefined) {
    return yield* refuse("overlap", `Unknown overlap "${overlapName}"; expected ${ROLL_OVERLAPS.map((o) => o.name).join(", ")}.`)
  }
  const old = yield* usableKey(orgId, keyId)
  const created = yield* (yield* ApiKeys.ApiKeys).create({
    orgId,
    name: old.name,
    mode: old.mode,
    scopes: old.scopes,
    numberSids: old.numberSids,
    botIds: old.botIds,
    expiresAt: old.expiresAt
  })
  const oldExpiresAt = new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(overlap.duration)).toISOString()
  yield* (yield* ApiKeyStore.ApiKeyStore).expireBy(old.id, oldExpiresAt)
  const after = yield* (yield* ApiKeyStore.ApiKeyStore).get(old.id)
  return { ...created, old: Option.getOrElse(after, () => old) }
})

/** Renames a usable key of the organisation. */
export const renameKey = Effect.fn("KeyIssuing.renameKey")(function*(orgId: string, keyId: string, given: string) {
  const key = yield* usableKey(orgId, keyId)
  const name = yield* checkName(given)
  yield* (yield* ApiKeyStore.ApiKeyStore).rename(key.id, name)
  return { ...key, name, previousName: key.name }
})
