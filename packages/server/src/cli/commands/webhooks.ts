/**
 * `parley webhooks add | list | rotate | enable | disable | delete`: where the
 * organisation's signed events are posted. A signing secret (Standard
 * Webhooks, `whsec_…`) is printed once, when it is made. The same endpoints
 * as the API's /webhook-endpoints, with the same URL rules and event filters.
 */
import { audited } from "../Audit.js"
import { Command, Options } from "@effect/cli"
import { ALL_EVENTS, type EnabledEvent, Events } from "@parley/core/internal"
import { Effect, Either, Option } from "effect"
import { addEndpoint, rotateSecret } from "../../admin/WebhookManagement.js"
import { Webhooks, type WebhookRow } from "../../store/SqlWebhooks.js"
import { csv, fail, fields, nowIso, oneOfEach, orNone, requireOrg } from "../Input.js"
import { listCommand } from "../ListCommand.js"
import { json, optionalText, orgFlag, print } from "../Output.js"

const EVENT_CHOICES: ReadonlyArray<EnabledEvent> = [ALL_EVENTS, ...Events.EventType.literals]

const enabledEvents = (value: string) =>
  Effect.flatMap(oneOfEach("--events", csv(value), EVENT_CHOICES, "event type"), (events) =>
    events.length === 0
      ? fail(`--events is empty; give a comma-separated list of ${EVENT_CHOICES.join(", ")}`)
      : events.includes(ALL_EVENTS) && events.length > 1
      ? fail("--events: * already means every event type; give it alone")
      : Effect.succeed(events))

/** What listings show: never the secret. */
const view = (w: WebhookRow) => ({
  id: w.id,
  orgId: w.orgId,
  url: w.url,
  enabledEvents: w.enabledEvents,
  description: w.description,
  status: w.disabledAt === null ? "enabled" : "disabled",
  createdAt: w.createdAt,
  disabledAt: w.disabledAt,
  disabledReason: w.disabledReason,
  lastSuccessAt: w.lastSuccessAt
})

const add = Command.make(
  "add",
  {
    json,
    org: orgFlag,
    url: Options.text("url").pipe(Options.withDescription("http(s) endpoint that receives the signed events")),
    events: Options.text("events").pipe(
      Options.withDescription(`Comma-separated event types (${Events.EventType.literals.join(", ")}), or * for all`),
      Options.withDefault(ALL_EVENTS)
    ),
    description: optionalText("description", "What the endpoint is for")
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const events = yield* enabledEvents(input.events)
      const added = yield* addEndpoint(input.org, input.url, events, Option.getOrNull(input.description))
      if (Either.isLeft(added)) return yield* fail(`--url "${input.url}" ${added.left}`)
      const row = added.right
      yield* audited(row.orgId, "webhook.added", row.url, [["id", row.id], ["events", row.enabledEvents.join(",")]])
      yield* print(input.json, { ...view(row), secret: row.secret }, () =>
        [
          `Added webhook ${row.id} for ${row.orgId}`,
          fields([["url", row.url], ["events", row.enabledEvents.join(", ")]]),
          "",
          "Signing secret (shown only now; verify the webhook-signature header with it):",
          `  ${row.secret}`
        ].join("\n"))
    })
).pipe(Command.withDescription("Add a webhook endpoint and print its signing secret once"))

const list = listCommand({
  description: "List an organisation's webhook endpoints (never their secrets)",
  load: (orgId) => Effect.map(Effect.flatMap(Webhooks, (webhooks) => webhooks.list(orgId)), (rows) => rows.map(view)),
  view: (row) => row,
  empty: (orgId) => `No webhooks for ${orgId}: add one with \`parley webhooks add --org ${orgId} --url URL\`.`,
  columns: ["ID", "URL", "EVENTS", "STATUS", "LAST SUCCESS", "DISABLED", "WHY"],
  cells: (w) => [w.id, w.url, w.enabledEvents.join(","), w.status, orNone(w.lastSuccessAt), orNone(w.disabledAt), orNone(w.disabledReason)]
})

const webhookId = Options.text("webhook").pipe(Options.withDescription("Webhook id (wh_…)"))

const existing = (id: string) =>
  Effect.flatMap(Webhooks, (webhooks) =>
    Effect.flatMap(webhooks.get(id), Option.match({
      onNone: () => fail(`No webhook ${id}: see \`parley webhooks list --org ORG\`.`),
      onSome: Effect.succeed
    })))

const rotate = Command.make("rotate", { json, webhook: webhookId }, (input) =>
  Effect.gen(function*() {
    const row = yield* existing(input.webhook)
    const { previousSecretValidUntil, secret } = yield* rotateSecret(row.id)
    yield* audited(row.orgId, "webhook.secret-rotated", row.id)
    yield* print(input.json, { id: row.id, secret, previousSecretValidUntil }, () =>
      [
        `New signing secret for ${row.id} (shown only now):`,
        `  ${secret}`,
        `The previous secret also signs every event until ${previousSecretValidUntil}.`
      ].join("\n"))
  })).pipe(Command.withDescription("Replace the signing secret; the old one keeps signing for 24 hours"))

const enable = Command.make("enable", { json, webhook: webhookId }, (input) =>
  Effect.gen(function*() {
    const row = yield* existing(input.webhook)
    yield* Effect.flatMap(Webhooks, (webhooks) => webhooks.enable(row.id))
    yield* audited(row.orgId, "webhook.enabled", row.id)
    yield* print(input.json, { id: row.id, status: "enabled" }, () => `Enabled ${row.id}.`)
  })).pipe(Command.withDescription("Enable a disabled endpoint again (events from while it was disabled are not sent)"))

const disable = Command.make("disable", { json, webhook: webhookId }, (input) =>
  Effect.gen(function*() {
    const row = yield* existing(input.webhook)
    const at = yield* nowIso
    if (!(yield* Effect.flatMap(Webhooks, (webhooks) => webhooks.disable(row.id, at)))) {
      return yield* fail(`Webhook ${row.id} is already disabled.`)
    }
    yield* audited(row.orgId, "webhook.disabled", row.id)
    yield* print(input.json, { id: row.id, status: "disabled" }, () => `Disabled ${row.id}.`)
  })).pipe(Command.withDescription("Stop sending events to an endpoint"))

const remove = Command.make("delete", { json, webhook: webhookId }, (input) =>
  Effect.gen(function*() {
    const row = yield* existing(input.webhook)
    yield* Effect.flatMap(Webhooks, (webhooks) => webhooks.remove(row.orgId, row.id))
    yield* audited(row.orgId, "webhook.deleted", row.id)
    yield* print(input.json, { id: row.id, deleted: true }, () => `Deleted ${row.id}; events not yet delivered to it are dropped.`)
  })).pipe(Command.withDescription("Remove an endpoint and the deliveries still owed to it"))

export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhook endpoints for signed events"),
  Command.withSubcommands([add, list, rotate, enable, disable, remove])
)
