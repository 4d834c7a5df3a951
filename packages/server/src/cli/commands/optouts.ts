/**
 * `parley optouts list | add | remove`: an organisation's opt-out list, for an administrator. The same list
 * as the API's /opt-outs and the console's page, under the same rules (the core's Consent); an administrator
 * may lift any opt-out, a carrier's included, and every change is kept in the number's history.
 */
import { audited } from "../Audit.js"
import { Command, Options } from "@effect/cli"
import { ALL_OPT_OUT_CHANNELS, Consent, OptOuts, PhoneOrShortCode } from "@parley/core/internal"
import { Effect, Option, Schema } from "effect"
import { csv, fail, fields, nowIso, oneOfEach, orNone, requireOrg } from "../Input.js"
import { json, optionalText, orgFlag, print, table } from "../Output.js"

const isPhone = Schema.is(PhoneOrShortCode)

const phoneOf = (value: string) =>
  isPhone(value.trim())
    ? Effect.succeed(value.trim())
    : fail(`--phone "${value}" must be an E.164 telephone number such as +14155550100 (or a short code such as 89898)`)

const view = OptOuts.publicOptOut

const list = Command.make(
  "list",
  {
    json,
    org: orgFlag,
    phone: optionalText("phone", "Only this number, with its history")
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const optOuts = yield* OptOuts.OptOuts
      const phone = Option.isSome(input.phone) ? yield* phoneOf(input.phone.value) : undefined
      const entries = yield* optOuts.page({ orgId: input.org, phone, limit: 10_000 })
      const history = phone === undefined ? [] : yield* optOuts.history(input.org, phone)
      yield* print(input.json, { items: entries.map(view), ...(phone === undefined ? {} : { history }) }, () =>
        [
          entries.length === 0
            ? phone === undefined ? `${input.org} has no opt-outs.` : `${phone} has not opted out: it may be texted and called.`
            : table([
              ["PHONE", "CHANNELS", "SOURCE", "SINCE", "REASON", "CAUSE"],
              ...entries.map((e) => [e.phone, e.channels.join(","), e.source, e.createdAt, orNone(e.reason), orNone(e.cause)])
            ]),
          ...(history.length === 0 ? [] : [
            "",
            "History (newest first):",
            table(history.map((c) => [c.at, c.change, c.channels.join(","), c.source, orNone(c.cause)]))
          ])
        ].join("\n"))
    })
).pipe(Command.withDescription("List the organisation's opt-outs (with --phone: one number and its history)"))

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    phone: Options.text("phone").pipe(Options.withDescription("The recipient's number, in E.164")),
    channels: optionalText("channels", `Comma-separated channels (${ALL_OPT_OUT_CHANNELS.join(", ")}); default all`),
    reason: optionalText("reason", "Why (kept in the history)")
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const phone = yield* phoneOf(input.phone)
      const channels = Option.isSome(input.channels)
        ? yield* oneOfEach("--channels", csv(input.channels.value), ALL_OPT_OUT_CHANNELS, "channel")
        : undefined
      const consent = yield* Consent.Consent
      const { changed, entry } = yield* consent.optOut(input.org, phone, {
        channels,
        reason: Option.getOrNull(input.reason)
      }, { source: "cli", cause: "parley optouts add", at: yield* nowIso })
      if (changed) yield* audited(input.org, "opt-out.added", phone, [["channels", entry.channels.join(",")]])
      yield* print(input.json, view(entry), () =>
        [
          changed ? `${phone} opted out of ${entry.channels.join(", ")}` : `${phone} was already opted out of ${entry.channels.join(", ")}`,
          fields([["since", entry.createdAt], ["source", entry.source], ["reason", orNone(entry.reason)]])
        ].join("\n"))
    })
).pipe(Command.withDescription("Opt a number out (nothing is sent to it on those channels from now on)"))

const remove = Command.make(
  "remove",
  { json, org: orgFlag, phone: Options.text("phone").pipe(Options.withDescription("The recipient's number, in E.164")) },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const phone = yield* phoneOf(input.phone)
      const consent = yield* Consent.Consent
      const removed = yield* consent.optIn(input.org, phone, { source: "cli", cause: "parley optouts remove", at: yield* nowIso }).pipe(
        Effect.catchTags({
          NotOptedOut: () => fail(`${phone} has not opted out of anything in ${input.org}`),
          CarrierOptOut: () => fail(`${phone}: unexpected refusal`)
        })
      )
      yield* audited(input.org, "opt-out.removed", phone, [["channels", removed.channels.join(",")]])
      yield* print(input.json, { removed: view(removed) }, () =>
        `${phone} opted back in: it may be texted and called again (it had opted out of ${removed.channels.join(", ")} on ${removed.createdAt}, source ${removed.source}).`)
    })
).pipe(Command.withDescription("Lift a number's opt-out (an administrator may lift any, a carrier's too)"))

export const optouts = Command.make("optouts").pipe(
  Command.withDescription("The organisation's opt-out list: who may not be texted or called"),
  Command.withSubcommands([list, add, remove])
)
