/**
 * Parley's opt-out list, mirrored on HubSpot's contacts: when a number's opt-out is recorded, changed or lifted
 * (a STOP or START reply, the API, the console, the CLI, a carrier), a trigger puts the number in the durable
 * outbox `hubspot_opt_outs` in the same transaction (migration 0041); this loop ticks `parley_sms_opt_out` on
 * every contact with that phone (phone or mobile phone) while the number is opted out of texts (SMS or
 * WhatsApp), and clears it once it is not. HubSpot's administrators see it on the contact, and a send that
 * links a contact whose box is ticked — by Parley or by hand — is refused (HubSpotRecords.findRecord).
 *
 * Failures follow crm/Outbox: an outage, a 429, a lapsed connection or a property `crm setup` has not made yet
 * is retried for as long as it takes; only a refusal of the update itself is given up, and recorded.
 */
import { SqlClient } from "@effect/sql"
import { Crm, OptOutChannel } from "@parley/core/internal"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { type Claimed, isPermanent, makeOutbox, outboxLoop, recordRefusal } from "../Outbox.js"
import { isRecord, text } from "./HubSpotApi.js"
import { HubSpotConnections, refusing } from "./HubSpotConnections.js"
import { BATCH_LIMIT, OPT_OUT_PROPERTY, setupAware, TEXT_CHANNELS } from "./HubSpotRecords.js"
import type { HubSpotSessionService } from "./HubSpotSession.js"

const CLAIM = 100
const LEASE_MS = 60_000
const POLL_MS = 1000

const Row = Schema.Struct({ phone: Schema.String })
const Entry = Schema.Struct({ channels: Schema.split(",").pipe(Schema.compose(Schema.Array(OptOutChannel))) })

export const make = (session: HubSpotSessionService) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* HubSpotConnections
    const outbox = yield* makeOutbox("hubspot_opt_outs", { leaseMs: LEASE_MS, versioned: true })
    const decodeRow = Schema.decodeUnknown(Schema.Array(Row))
    const decodeEntry = Schema.decodeUnknown(Schema.Array(Entry))

    /** Done unless the number's opt-out changed since the claim (then it stays due, with its newer version). */
    const done = (row: Claimed) => sql`DELETE FROM hubspot_opt_outs WHERE action_id = ${row.action_id} AND version = ${row.version ?? 0}`

    const syncOne = (row: Claimed, now: number) =>
      Effect.gen(function*() {
        const phone = (yield* Effect.flatMap(sql`SELECT phone FROM hubspot_opt_outs WHERE action_id = ${row.action_id}`, decodeRow))[0]?.phone
        if (phone === undefined) return
        const entry = yield* Effect.flatMap(
          sql`SELECT channels FROM opt_outs WHERE org_id = ${row.org_id} AND phone = ${phone}`,
          decodeEntry
        )
        const optedOut = Option.match(Option.fromNullable(entry[0]), {
          onNone: () => false,
          onSome: (e) => e.channels.some((c) => TEXT_CHANNELS.some((t) => t === c))
        })
        const wanted = optedOut ? "true" : "false"
        const found = yield* Effect.mapError(
          session.call(row.org_id, "POST", "/crm/v3/objects/contacts/search", {
            filterGroups: [
              { filters: [{ propertyName: "phone", operator: "EQ", value: phone }] },
              { filters: [{ propertyName: "mobilephone", operator: "EQ", value: phone }] }
            ],
            properties: [OPT_OUT_PROPERTY],
            limit: BATCH_LIMIT
          }),
          // A search naming a property that does not exist is refused as a whole: `crm setup` has not run.
          (error) => error.reason === "rejected" ? new Crm.CrmError({ ...error, reason: "setup_required", field: OPT_OUT_PROPERTY }) : error
        )
        const results = isRecord(found.json) && Array.isArray(found.json["results"]) ? found.json["results"].filter(isRecord) : []
        // Only contacts whose box differs (an unticked box reads as no value at all).
        const inputs = results.flatMap((contact) => {
          const id = text(contact, "id")
          const props = isRecord(contact["properties"]) ? contact["properties"] : {}
          const current = text(props, OPT_OUT_PROPERTY) === "true" ? "true" : "false"
          return id === undefined || current === wanted ? [] : [{ id, properties: { [OPT_OUT_PROPERTY]: wanted } }]
        })
        if (inputs.length > 0) yield* session.call(row.org_id, "POST", "/crm/v3/objects/contacts/batch/update", { inputs })
        yield* done(row)
      }).pipe(
        Effect.catchTag("CrmError", (raw) => {
          const error = setupAware(raw)
          return isPermanent(error)
            ? Effect.zipRight(
              done(row),
              recordRefusal(refusing(connections), "optout", row.org_id, row.action_id.split(" ").at(-1) ?? row.action_id, {
                code: error.code ?? "REFUSED",
                field: error.field
              }, now)
            )
            : outbox.retryLater([row], now)
        })
      )

    const round = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* outbox.claim(now, CLAIM)
      yield* Effect.forEach(claimed, (row) => syncOne(row, now), { concurrency: 2, discard: true })
      return claimed.length
    })

    return { round }
  })

/** The opt-out loop of a server process. */
export const layer = (session: HubSpotSessionService) =>
  Layer.scopedDiscard(Effect.flatMap(make(session), ({ round }) => outboxLoop("hubspot opt-outs", round, { claim: CLAIM, pollMs: POLL_MS })))
