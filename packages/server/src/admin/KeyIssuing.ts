/**
 * The rules for minting an API key, in one place for the CLI (`parley keys create`) and the console's
 * Developer access page: the organisation's CRM account must be connected (every request runs as it),
 * a name, known scopes, restrictions among the organisation's own numbers and bots, an expiry in the
 * future. A refusal names the field it is about, so each caller shows it where its user gave the value
 * (a flag, a form field). The key itself is made by the core's ApiKeys service, as for everyone.
 */
import { ALL_SCOPES, ApiKeys, Crm, type KeyMode, OffsetTimestamp, Organisations, type Scope } from "@parley/core/internal"
import { Clock, Data, Effect, Either, Schema } from "effect"

export type KeyField = "crm" | "name" | "scopes" | "numbers" | "bots" | "expiresAt"

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

const unknownOf = (items: ReadonlyArray<string>, allowed: ReadonlyArray<string>) => items.find((i) => !allowed.includes(i))

export const issueKey = Effect.fn("KeyIssuing.issueKey")(function*(request: KeyRequest) {
  const connection = yield* (yield* Crm.Crm).connection(request.orgId)
  if (connection.state === "disconnected") {
    return yield* refuse("crm", "No CRM account is connected, and every request runs as that account: connect one first.")
  }
  if (connection.state === "identity_changed") {
    return yield* refuse("crm", "The CRM account changed identity: reconnect it first.")
  }
  const name = request.name.trim()
  if (name === "") return yield* refuse("name", "Give the key a name to tell it apart.")
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
