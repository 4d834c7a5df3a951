/**
 * Who owns a new Parley_Messages record in Zoho: the owner of the Lead, Contact, Vendor or Deal it is linked
 * to, so each rep sees their own texts and calls in their views, reports and related lists; else (no linked
 * record, or one whose owner cannot be read) the connected Zoho user.
 *
 * Parley reads the linked record anyway just before it records an action (`findRecord` for an outbound one,
 * `findByPhone` for an inbound one), Owner included; the owner is remembered here for a short while so the
 * upsert that follows needs no call of its own. Only when it is not remembered (the read was made by another
 * process, or long ago) is the record's Owner read from Zoho (`GET /{module}/{id}?fields=Owner`).
 */
import { SqlClient } from "@effect/sql"
import { Crm } from "@parley/core/domain"
import { Clock, Effect } from "effect"
import { storage } from "../../store/rows.js"
import { type CrmAnswer, dataOf, isRecord, text } from "./ZohoApi.js"
import type { ZohoSessionService } from "./ZohoSession.js"

/** How long a read owner is remembered: far longer than a creation takes, far shorter than reassignments. */
const REMEMBER_MS = 60_000
const MAX_REMEMBERED = 10_000

/** The user id of a record's `Owner` lookup (`{ "name", "id" }`), if it has one. */
export const ownerIdOf = (record: Readonly<Record<string, unknown>>): string | null => {
  const owner = record["Owner"]
  return isRecord(owner) ? (text(owner, "id") ?? null) : null
}

/** Whether Zoho refused a write's only record for its `Owner` (`INVALID_DATA` naming the field). */
export const ownerRefused = (answer: CrmAnswer): boolean => {
  const item = dataOf(answer)[0]
  const details = item?.["details"]
  return item !== undefined && text(item, "code") === "INVALID_DATA" && isRecord(details) && text(details, "api_name") === "Owner"
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const remembered = new Map<string, { readonly at: number; readonly ownerId: string }>()
  const keyOf = (orgId: string, module: string, id: string) => `${orgId}\u0000${module}\u0000${id}`

  /** Called with every record read from Zoho that carries its Owner. */
  const remember = (orgId: string, module: string, id: string, ownerId: string | null) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      if (ownerId === null) return
      const key = keyOf(orgId, module, id)
      remembered.delete(key)
      remembered.set(key, { at: now, ownerId })
      // Oldest first in a Map's order: the bound drops the reads least likely to be needed again.
      while (remembered.size > MAX_REMEMBERED) {
        const oldest = remembered.keys().next()
        if (oldest.done === true) break
        remembered.delete(oldest.value)
      }
    })

  const connectedUser = (orgId: string) =>
    Effect.mapError(
      storage("zoho.connectedUser")(
        Effect.map(
          sql<{ readonly user_id: string }>`SELECT user_id FROM zoho_connections WHERE org_id = ${orgId}`,
          (rows) => rows[0]?.user_id ?? null
        )
      ),
      (cause) => new Crm.CrmError({ operation: "zoho.owner", cause, reason: "unavailable" })
    )

  /** The Zoho user id a new record of `draft` is owned by (null: none known, Zoho's default applies). */
  const ownerOf = (session: ZohoSessionService, draft: Crm.CrmActionDraft): Effect.Effect<string | null, Crm.CrmError> =>
    Effect.gen(function*() {
      const linked = draft.record
      if (linked === null) return yield* connectedUser(draft.orgId)
      const now = yield* Clock.currentTimeMillis
      const hit = remembered.get(keyOf(draft.orgId, linked.module, linked.id))
      if (hit !== undefined && now - hit.at < REMEMBER_MS) return hit.ownerId
      const answer = yield* Effect.either(session.call(draft.orgId, "GET", `/${linked.module}/${linked.id}?fields=Owner`))
      // A record Parley may not read, or gone since, leaves the record with the connected user.
      const read = answer._tag === "Right" ? dataOf(answer.right)[0] : undefined
      const ownerId = read === undefined ? null : ownerIdOf(read)
      if (answer._tag === "Left" && answer.left.reason !== "permission_denied") return yield* answer.left
      if (ownerId === null) return yield* connectedUser(draft.orgId)
      yield* remember(draft.orgId, linked.module, linked.id, ownerId)
      return ownerId
    })

  return { remember, ownerOf, connectedUser }
})
