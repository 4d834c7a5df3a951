/**
 * `parley providers set | show | clear`: which real provider an organisation
 * sends through — Twilio for texts and WhatsApp, Vapi for AI calls. Without
 * one the organisation uses the simulator. Credentials are stored sealed and
 * never printed again, not even by `show`.
 */
import { Command, Options } from "@effect/cli"
import { Clock, Effect, Option } from "effect"
import {
  DEFAULT_API_BASE,
  PROVIDER_KINDS,
  type ProviderAccount,
  ProviderAccounts
} from "../../store/SqlProviderAccounts.js"
import { fail, fields, nonEmpty, requireOrg } from "../Input.js"
import { isInteractive, oneFromStdin, resolveSecret, secretOptions } from "../Secrets.js"
import { json, print, table } from "../Output.js"

const orgOption = Options.text("org").pipe(Options.withDescription("Organisation id (org_…)"))
const kindOption = Options.choice("kind", PROVIDER_KINDS).pipe(
  Options.withDescription("twilio (texts and WhatsApp) or vapi (AI calls)")
)
const optionalText = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

/** An absolute http(s) URL without a trailing slash. */
const apiBase = (value: string) =>
  Effect.gen(function*() {
    const trimmed = value.trim().replace(/\/+$/, "")
    if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(trimmed)) {
      return yield* fail(`--api-base "${value}" must be an http:// or https:// URL, such as ${DEFAULT_API_BASE.twilio}`)
    }
    return trimmed
  })

const required = (flag: string, value: Option.Option<string>, kind: string) =>
  Option.isNone(value) ? fail(`${flag} is required for --kind ${kind}`) : nonEmpty(flag, value.value)

const authToken = secretOptions("auth-token", "Twilio: the Auth Token (also checks X-Twilio-Signature on callbacks)")
const apiKeySecret = secretOptions("api-key-secret", "Twilio: that API key's secret")
const apiKey = secretOptions("api-key", "Vapi: the private API key")
const webhookSecret = secretOptions(
  "webhook-secret",
  "Vapi: the secret of the server URL or credential that authenticates Vapi's server messages"
)

/** A header name as HTTP allows it (a token). */
const headerName = (flag: string, value: Option.Option<string>) =>
  Option.match(value, {
    onNone: () => Effect.succeed(undefined),
    onSome: (name) =>
      /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name.trim())
        ? Effect.succeed(name.trim().toLowerCase())
        : fail(`${flag} "${name}" must be an HTTP header name, such as x-signature`)
  })

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
      const base = Option.isSome(input.apiBase) ? yield* apiBase(input.apiBase.value) : DEFAULT_API_BASE[input.kind]
      const interactive = isInteractive()
      let account: ProviderAccount
      if (input.kind === "twilio") {
        yield* oneFromStdin([["auth-token", input.authToken], ["api-key-secret", input.apiKeySecret]])
        const accountSid = yield* required("--account-sid", input.accountSid, "twilio")
        if (!/^AC[0-9a-fA-F]{32}$/.test(accountSid)) {
          return yield* fail(`--account-sid "${accountSid}" must be AC followed by 32 hex digits (Twilio Console → Account Info)`)
        }
        if (Option.isSome(input.messagingServiceSid) && !/^MG[0-9a-fA-F]{32}$/.test(input.messagingServiceSid.value)) {
          return yield* fail(`--messaging-service-sid "${input.messagingServiceSid.value}" must be MG followed by 32 hex digits`)
        }
        const token = yield* resolveSecret("auth-token", input.authToken, interactive)
        const keySecret = yield* resolveSecret("api-key-secret", input.apiKeySecret, false)
        if (Option.isSome(input.apiKeySid) !== Option.isSome(keySecret)) {
          return yield* fail("--api-key-sid and --api-key-secret go together")
        }
        const contentBase = Option.isSome(input.contentApiBase)
          ? yield* apiBase(input.contentApiBase.value)
          : Option.isSome(input.apiBase) ? base : undefined
        account = {
          kind: "twilio",
          orgId: input.org,
          apiBase: base,
          accountSid,
          authToken: yield* required("--auth-token", token, "twilio"),
          apiKeySid: Option.getOrUndefined(input.apiKeySid),
          apiKeySecret: Option.getOrUndefined(keySecret),
          messagingServiceSid: Option.getOrUndefined(input.messagingServiceSid),
          contentApiBase: contentBase
        }
      } else {
        yield* oneFromStdin([["api-key", input.apiKey], ["webhook-secret", input.webhookSecret]])
        const payloadFormat = Option.getOrUndefined(input.payloadFormat)
        if (payloadFormat !== undefined && !payloadFormat.includes("{body}")) {
          return yield* fail(`--payload-format "${payloadFormat}" must include {body}`)
        }
        account = {
          kind: "vapi",
          orgId: input.org,
          apiBase: base,
          apiKey: yield* required("--api-key", yield* resolveSecret("api-key", input.apiKey, interactive), "vapi"),
          webhookSecret: yield* required(
            "--webhook-secret",
            yield* resolveSecret("webhook-secret", input.webhookSecret, interactive),
            "vapi"
          ),
          signatureHeader: yield* headerName("--signature-header", input.signatureHeader),
          timestampHeader: yield* headerName("--timestamp-header", input.timestampHeader),
          payloadFormat,
          credentialHeader: yield* headerName("--credential-header", input.credentialHeader)
        }
      }
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
