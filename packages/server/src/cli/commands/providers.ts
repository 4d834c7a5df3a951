/**
 * `parley providers set | show | clear`: which real provider an organisation
 * sends through — Twilio for texts and WhatsApp, Vapi for AI calls. Without
 * one the organisation uses the simulator. Credentials are stored sealed and
 * never printed again, not even by `show`.
 */
import { Command, Options } from "@effect/cli"
import { Clock, Effect, Either, Option } from "effect"
import { type ProviderField, providerAccount } from "../../admin/ProviderSettings.js"
import { PROVIDER_KINDS, ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import { fail, fields, requireOrg } from "../Input.js"
import { json, print, table } from "../Output.js"

const orgOption = Options.text("org").pipe(Options.withDescription("Organisation id (org_…)"))
const kindOption = Options.choice("kind", PROVIDER_KINDS).pipe(
  Options.withDescription("twilio (texts and WhatsApp) or vapi (AI calls)")
)
const optionalText = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

const FLAGS: Readonly<Record<ProviderField, string>> = {
  apiBase: "--api-base",
  accountSid: "--account-sid",
  authToken: "--auth-token",
  apiKeySid: "--api-key-sid",
  apiKeySecret: "--api-key-secret",
  messagingServiceSid: "--messaging-service-sid",
  apiKey: "--api-key",
  webhookSecret: "--webhook-secret"
}

const set = Command.make(
  "set",
  {
    json,
    org: orgOption,
    kind: kindOption,
    apiBase: optionalText("api-base", "The provider's API base URL (default: its public API); for regional edges and local fakes"),
    accountSid: optionalText("account-sid", "Twilio: the Account SID (AC…)"),
    authToken: optionalText("auth-token", "Twilio: the Auth Token (also checks X-Twilio-Signature on callbacks)"),
    apiKeySid: optionalText("api-key-sid", "Twilio: an API key SID (SK…) to send with instead of the Auth Token"),
    apiKeySecret: optionalText("api-key-secret", "Twilio: that API key's secret"),
    messagingServiceSid: optionalText("messaging-service-sid", "Twilio: send through this Messaging Service (MG…)"),
    apiKey: optionalText("api-key", "Vapi: the private API key"),
    webhookSecret: optionalText("webhook-secret", "Vapi: the secret Vapi sends with server messages (X-Vapi-Secret)")
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      // The rules are the console's too (ProviderSettings); a refusal is reported against its flag.
      const checked = providerAccount({
        kind: input.kind,
        orgId: input.org,
        apiBase: Option.getOrUndefined(input.apiBase),
        accountSid: Option.getOrUndefined(input.accountSid),
        authToken: Option.getOrUndefined(input.authToken),
        apiKeySid: Option.getOrUndefined(input.apiKeySid),
        apiKeySecret: Option.getOrUndefined(input.apiKeySecret),
        messagingServiceSid: Option.getOrUndefined(input.messagingServiceSid),
        apiKey: Option.getOrUndefined(input.apiKey),
        webhookSecret: Option.getOrUndefined(input.webhookSecret)
      })
      if (Either.isLeft(checked)) return yield* fail(`${FLAGS[checked.left.field]} ${checked.left.message}`)
      const account = checked.right
      const base = account.apiBase
      const at = new Date(yield* Clock.currentTimeMillis).toISOString()
      yield* (yield* ProviderAccounts).set(account, at)
      const shown = { orgId: input.org, kind: input.kind, apiBase: base, accountId: account.kind === "twilio" ? account.accountSid : null }
      yield* print(input.json, shown, () =>
        [
          `${input.org} now sends ${input.kind === "twilio" ? "texts and WhatsApp through Twilio" : "AI calls through Vapi"}.`,
          fields([["api base", base], ...(shown.accountId === null ? [] : [["account", shown.accountId] as const])]),
          "The credentials are stored sealed and will not be shown again."
        ].join("\n"))
    })
).pipe(Command.withDescription("Connect an organisation to Twilio or Vapi (credentials are stored sealed)"))

const show = Command.make(
  "show",
  { json, org: orgOption },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const accounts = yield* (yield* ProviderAccounts).list(input.org)
      const using = (kind: "twilio" | "vapi") => accounts.some((a) => a.kind === kind)
      const summary = {
        orgId: input.org,
        texts: using("twilio") ? "twilio" : "simulator",
        aiCalls: using("vapi") ? "vapi" : "simulator",
        accounts
      }
      yield* print(input.json, summary, () =>
        [
          `Texts of ${input.org}: ${summary.texts}; AI calls: ${summary.aiCalls}`,
          ...(accounts.length === 0 ? [] : [
            table([
              ["KIND", "API BASE", "ACCOUNT", "UPDATED"],
              ...accounts.map((a) => [a.kind, a.apiBase, a.accountId ?? "-", a.updatedAt])
            ])
          ])
        ].join("\n"))
    })
).pipe(Command.withDescription("Which providers an organisation uses (never a secret)"))

const clear = Command.make(
  "clear",
  { json, org: orgOption, kind: kindOption },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const removed = yield* (yield* ProviderAccounts).clear(input.org, input.kind)
      if (!removed) return yield* fail(`${input.org} has no ${input.kind} account`)
      yield* print(input.json, { orgId: input.org, kind: input.kind, cleared: true }, () =>
        `${input.org} no longer uses ${input.kind}; its ${input.kind === "twilio" ? "texts" : "AI calls"} go to the simulator.`)
    })
).pipe(Command.withDescription("Return an organisation's texts or AI calls to the simulator"))

export const providers = Command.make("providers").pipe(
  Command.withDescription("Real providers: Twilio (texts, WhatsApp) and Vapi (AI calls)"),
  Command.withSubcommands([set, show, clear])
)
