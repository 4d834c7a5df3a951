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
import { isInteractive, oneFromStdin, resolveSecret, secretOptions } from "../Secrets.js"
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
  webhookSecret: "--webhook-secret",
  contentApiBase: "--content-api-base",
  signatureHeader: "--signature-header",
  timestampHeader: "--timestamp-header",
  payloadFormat: "--payload-format",
  credentialHeader: "--credential-header"
}

const authToken = secretOptions("auth-token", "Twilio: the Auth Token (also checks X-Twilio-Signature on callbacks)")
const apiKeySecret = secretOptions("api-key-secret", "Twilio: that API key's secret")
const apiKey = secretOptions("api-key", "Vapi: the private API key")
const webhookSecret = secretOptions(
  "webhook-secret",
  "Vapi: the secret of the server URL or credential that authenticates Vapi's server messages"
)

const set = Command.make(
  "set",
  {
    json,
    org: orgOption,
    kind: kindOption,
    apiBase: optionalText("api-base", "The provider's API base URL (default: its public API); for regional edges and local fakes"),
    contentApiBase: optionalText(
      "content-api-base",
      "Twilio: the Content API base URL for templates' text (default https://content.twilio.com; with --api-base, that URL)"
    ),
    accountSid: optionalText("account-sid", "Twilio: the Account SID (AC…)"),
    authToken: Options.all(authToken),
    apiKeySid: optionalText("api-key-sid", "Twilio: an API key SID (SK…) to send with instead of the Auth Token"),
    apiKeySecret: Options.all(apiKeySecret),
    messagingServiceSid: optionalText("messaging-service-sid", "Twilio: send through this Messaging Service (MG…)"),
    apiKey: Options.all(apiKey),
    webhookSecret: Options.all(webhookSecret),
    signatureHeader: optionalText("signature-header", "Vapi HMAC credential: the signature header (default x-signature)"),
    timestampHeader: optionalText("timestamp-header", "Vapi HMAC credential: the timestamp header (default x-timestamp)"),
    payloadFormat: optionalText(
      "payload-format",
      "Vapi HMAC credential: what is signed, from {timestamp} {body} {method} {url} (default {timestamp}.{body})"
    ),
    credentialHeader: optionalText(
      "credential-header",
      "Vapi Bearer credential: the header carrying the token (default Authorization)"
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      // Secrets from standard input, a named environment variable or a prompt (Secrets), the flag last.
      const twilio = input.kind === "twilio"
      const interactive = isInteractive()
      yield* oneFromStdin(twilio
        ? [["auth-token", input.authToken], ["api-key-secret", input.apiKeySecret]]
        : [["api-key", input.apiKey], ["webhook-secret", input.webhookSecret]])
      const secret = (flag: string, given: Parameters<typeof resolveSecret>[1], required: boolean) =>
        Effect.map(resolveSecret(flag, given, required && interactive), Option.getOrUndefined)
      // The rules are the console's too (ProviderSettings); a refusal is reported against its flag.
      const checked = providerAccount({
        kind: input.kind,
        orgId: input.org,
        apiBase: Option.getOrUndefined(input.apiBase),
        accountSid: Option.getOrUndefined(input.accountSid),
        authToken: twilio ? yield* secret("auth-token", input.authToken, true) : undefined,
        apiKeySid: Option.getOrUndefined(input.apiKeySid),
        apiKeySecret: twilio ? yield* secret("api-key-secret", input.apiKeySecret, false) : undefined,
        messagingServiceSid: Option.getOrUndefined(input.messagingServiceSid),
        apiKey: twilio ? undefined : yield* secret("api-key", input.apiKey, true),
        webhookSecret: twilio ? undefined : yield* secret("webhook-secret", input.webhookSecret, true),
        contentApiBase: Option.getOrUndefined(input.contentApiBase),
        signatureHeader: Option.getOrUndefined(input.signatureHeader),
        timestampHeader: Option.getOrUndefined(input.timestampHeader),
        payloadFormat: Option.getOrUndefined(input.payloadFormat),
        credentialHeader: Option.getOrUndefined(input.credentialHeader)
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
