/**
 * `parley inbound`: simulate a text arriving on one of the organisation's
 * numbers, as the carrier would report it: a Received CRM action linked to the
 * record with that phone number, and a `message.received` event, atomically.
 */
import { Command, Options } from "@effect/cli"
import { ActionRecords, Crm, Events, Organisations, UnitOfWork } from "@parley/core"
import { Clock, Effect } from "effect"
import { e164, fail, fields, orNone, requireOrg } from "../Input.js"
import { json, print } from "../Output.js"

export const inbound = Command.make(
  "inbound",
  {
    json,
    org: Options.text("org").pipe(Options.withDescription("Organisation id (org_…)")),
    from: Options.text("from").pipe(Options.withDescription("The sender, in E.164")),
    to: Options.text("to").pipe(Options.withDescription("One of the organisation's numbers, in E.164")),
    body: Options.text("body").pipe(Options.withDescription("The message text")),
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
      const organisations = yield* Organisations.Organisations
      const numbers = yield* organisations.listNumbers(input.org)
      const line = numbers.find((n) => n.phoneNumber === to)
      if (line === undefined) {
        return yield* fail(
          `--to ${to} is not a number of ${input.org}` +
            (numbers.length === 0 ? " (it has none yet)" : `; its numbers are ${numbers.map((n) => n.phoneNumber).join(", ")}`)
        )
      }
      if (input.channel === "WhatsApp" && !line.whatsApp) {
        return yield* fail(`--to ${to} is not connected to WhatsApp; use --channel SMS or a WhatsApp number`)
      }
      if (input.body.trim() === "") return yield* fail("--body must not be empty")
      const crm = yield* Crm.Crm
      const record = (yield* crm.listRecords(input.org)).find((r) => r.phone === from)
      const nowMs = yield* Clock.currentTimeMillis
      const now = new Date(nowMs).toISOString()
      const unitOfWork = yield* UnitOfWork.UnitOfWork
      const action = yield* unitOfWork.atomically(Effect.gen(function*() {
        const created = yield* crm.insertAction({
          orgId: input.org,
          kind: "message",
          type: input.channel,
          direction: "Inbound",
          status: "Received",
          line: to,
          counterpart: from,
          fromNumberSid: line.sid,
          body: input.body,
          botId: null,
          mode: null,
          purposeMessage: null,
          templateId: null,
          whatsAppContentSid: null,
          whatsAppContentVariables: null,
          read: null,
          at: now,
          scheduledFor: null,
          dueAt: nowMs,
          owner: null,
          record: record === undefined ? null : { module: record.module, id: record.id, name: record.name },
          linkedRecords: record === undefined ? [] : [{ module: record.module, id: record.id, name: record.name }],
          sid: null,
          audioFileId: null,
          errorMessage: null,
          sentBy: null,
          modified: now,
          apiKeyId: null
        })
        yield* Events.emit("message.received", created)
        return created
      }))
      const view = ActionRecords.toActionRecord(action)
      yield* print(input.json, view, () =>
        [
          `Received ${action.type} message ${action.id} on ${line.phoneNumber} (${line.sid})`,
          fields([
            ["from", from],
            ["record", action.record === null ? "-" : `${action.record.module} ${action.record.id} (${action.record.name})`],
            ["body", orNone(action.body)]
          ])
        ].join("\n"))
    })
).pipe(Command.withDescription("Simulate an inbound text on one of the organisation's numbers"))
