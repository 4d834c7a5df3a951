/**
 * `parley inbound`: simulate a text arriving on one of the organisation's
 * numbers — the same path as the carrier's inbound webhook (the core's
 * Inbound service): a Received CRM action linked to the record with that
 * phone number, and a `message.received` event, atomically.
 */
import { Command, Options } from "@effect/cli"
import { ActionRecords, Inbound } from "@parley/core/internal"
import { Effect } from "effect"
import { e164, fail, fields, orNone, requireOrg } from "../Input.js"
import { json, orgFlag, print } from "../Output.js"

export const inbound = Command.make(
  "inbound",
  {
    json,
    org: orgFlag,
    from: Options.text("from").pipe(Options.withDescription("The sender, in E.164")),
    to: Options.text("to").pipe(Options.withDescription("One of the organisation's numbers, in E.164")),
    body: Options.text("body").pipe(Options.withDescription("The message text (may be empty with --media-url)")),
    mediaUrls: Options.text("media-url").pipe(
      Options.repeated,
      Options.withDescription("A media item's URL, as an MMS carries it (repeat for several, at most 10)")
    ),
    channel: Options.choice("channel", ["SMS", "WhatsApp"]).pipe(
      Options.withDescription("SMS (default) or WhatsApp (needs a WhatsApp-connected number)"),
      Options.withDefault("SMS" as const)
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const from = yield* e164("--from", input.from.trim())
      const to = yield* e164("--to", input.to.trim())
      const inboundService = yield* Inbound.Inbound
      const action = yield* inboundService
        .receive({ orgId: input.org, from, to, body: input.body, mediaUrls: input.mediaUrls, channel: input.channel })
        .pipe(Effect.catchTag("InboundRejected", (rejected) => fail(rejected.message)))
      const view = ActionRecords.toActionRecord(action)
      yield* print(input.json, view, () =>
        [
          `Received ${action.type} message ${action.id} on ${action.line} (${action.fromNumberSid ?? "-"})`,
          fields([
            ["from", from],
            ["record", action.record === null ? "-" : `${action.record.module} ${action.record.id} (${action.record.name})`],
            ["body", orNone(action.body)],
            ["media", action.mediaUrls.length === 0 ? "-" : action.mediaUrls.join(" ")]
          ])
        ].join("\n"))
    })
).pipe(Command.withDescription("Simulate an inbound text on one of the organisation's numbers"))
