/**
 * `parley webhooks add | list`: where the organisation's signed events are
 * posted. The signing secret (Standard Webhooks, `whsec_…`) is printed once.
 */
import { randomBytes } from "node:crypto"
import { Command, Options } from "@effect/cli"
import { Crypto } from "@parley/core"
import { Effect } from "effect"
import { Webhooks, type WebhookRow } from "../../store/SqlWebhooks.js"
import { fail, fields, nowIso, orNone, requireOrg } from "../Input.js"
import { json, print, table } from "../Output.js"

const httpUrl = (value: string) => {
  const text = value.trim()
  let parsed: URL | undefined
  try {
    parsed = new URL(text)
  } catch {
    parsed = undefined
  }
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.hostname === "") {
    return fail(`--url "${value}" must be an http:// or https:// URL, such as https://example.com/parley/events`)
  }
  return Effect.succeed(parsed.toString())
}

/** What listings show: never the secret. */
const view = (w: WebhookRow) => ({
  id: w.id,
  orgId: w.orgId,
  url: w.url,
  status: w.disabledAt === null ? "enabled" : "disabled",
  createdAt: w.createdAt,
  disabledAt: w.disabledAt
})

const add = Command.make(
  "add",
  {
    json,
    org: Options.text("org").pipe(Options.withDescription("Organisation id (org_…)")),
    url: Options.text("url").pipe(Options.withDescription("http(s) endpoint that receives the signed events"))
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const url = yield* httpUrl(input.url)
      const webhooks = yield* Webhooks
      const row: WebhookRow = {
        id: Crypto.newId("wh"),
        orgId: input.org,
        url,
        secret: `whsec_${randomBytes(24).toString("base64")}`,
        createdAt: yield* nowIso,
        disabledAt: null
      }
      yield* webhooks.insert(row)
      yield* print(input.json, { ...view(row), secret: row.secret }, () =>
        [
          `Added webhook ${row.id} for ${row.orgId}`,
          fields([["url", row.url]]),
          "",
          "Signing secret (shown only now; verify the webhook-signature header with it):",
          `  ${row.secret}`
        ].join("\n"))
    })
).pipe(Command.withDescription("Add a webhook endpoint and print its signing secret once"))

const list = Command.make(
  "list",
  { json, org: Options.text("org").pipe(Options.withDescription("Organisation id (org_…)")) },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const webhooks = yield* Webhooks
      const rows = (yield* webhooks.list(input.org)).map(view)
      yield* print(input.json, { items: rows }, () =>
        rows.length === 0
          ? `No webhooks for ${input.org}: add one with \`parley webhooks add --org ${input.org} --url URL\`.`
          : table([
            ["ID", "URL", "STATUS", "CREATED", "DISABLED"],
            ...rows.map((w) => [w.id, w.url, w.status, w.createdAt, orNone(w.disabledAt)])
          ]))
    })
).pipe(Command.withDescription("List an organisation's webhook endpoints (never their secrets)"))

export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhook endpoints for signed events"),
  Command.withSubcommands([add, list])
)
