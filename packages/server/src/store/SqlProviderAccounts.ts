/**
 * Each organisation's provider accounts: which carrier sends its texts and
 * which AI-call provider places its calls. An organisation without one uses
 * the simulator (the embedded default). Credentials are stored sealed
 * (SecretBox) and leave this module only towards the provider: no API, CLI or
 * log line ever shows them after they are set.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { NullableString, storage } from "./rows.js"
import * as SecretBox from "./SecretBox.js"

export const PROVIDER_KINDS = ["twilio", "vapi"] as const
export type ProviderKind = typeof PROVIDER_KINDS[number]

export const DEFAULT_API_BASE: Readonly<Record<ProviderKind, string>> = {
  twilio: "https://api.twilio.com",
  vapi: "https://api.vapi.ai"
}

// The sealed settings: secrets, and beside them the settings that are no secret but go with them.
const TwilioSecrets = Schema.Struct({
  authToken: Schema.String,
  apiKeySid: Schema.optional(Schema.String),
  apiKeySecret: Schema.optional(Schema.String),
  messagingServiceSid: Schema.optional(Schema.String),
  contentApiBase: Schema.optional(Schema.String)
})
const VapiSecrets = Schema.Struct({
  apiKey: Schema.String,
  webhookSecret: Schema.String,
  signatureHeader: Schema.optional(Schema.String),
  timestampHeader: Schema.optional(Schema.String),
  payloadFormat: Schema.optional(Schema.String),
  credentialHeader: Schema.optional(Schema.String)
})

export interface TwilioAccountSettings {
  readonly kind: "twilio"
  readonly orgId: string
  readonly apiBase: string
  readonly accountSid: string
  readonly authToken: string
  readonly apiKeySid?: string | undefined
  readonly apiKeySecret?: string | undefined
  readonly messagingServiceSid?: string | undefined
  /** Twilio's Content API (templates' text); default content.twilio.com. */
  readonly contentApiBase?: string | undefined
}

export interface VapiAccountSettings {
  readonly kind: "vapi"
  readonly orgId: string
  readonly apiBase: string
  readonly apiKey: string
  readonly webhookSecret: string
  /** How Vapi's credential authenticates server messages when not with Vapi's defaults (VapiServerAuth). */
  readonly signatureHeader?: string | undefined
  readonly timestampHeader?: string | undefined
  readonly payloadFormat?: string | undefined
  readonly credentialHeader?: string | undefined
}

export type ProviderAccount = TwilioAccountSettings | VapiAccountSettings

/** What may be shown of an account: never a secret. */
export interface ProviderAccountSummary {
  readonly orgId: string
  readonly kind: ProviderKind
  readonly apiBase: string
  readonly accountId: string | null
  readonly updatedAt: string
}

export interface ProviderAccountsService {
  readonly twilio: (orgId: string) => Effect.Effect<Option.Option<TwilioAccountSettings>, StorageError>
  readonly vapi: (orgId: string) => Effect.Effect<Option.Option<VapiAccountSettings>, StorageError>
  readonly set: (account: ProviderAccount, at: string) => Effect.Effect<void, StorageError>
  /** False when the organisation had no account of that kind. */
  readonly clear: (orgId: string, kind: ProviderKind) => Effect.Effect<boolean, StorageError>
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<ProviderAccountSummary>, StorageError>
}

export class ProviderAccounts extends Context.Tag("@parley/server/store/ProviderAccounts")<
  ProviderAccounts,
  ProviderAccountsService
>() {}

const Row = Schema.Struct({
  org_id: Schema.String,
  kind: Schema.Literal(...PROVIDER_KINDS),
  api_base: Schema.String,
  account_id: NullableString,
  secrets: Schema.String,
  updated_at: Schema.String
})

const decodeTwilioSecrets = Schema.decodeUnknown(Schema.parseJson(TwilioSecrets))
const decodeVapiSecrets = Schema.decodeUnknown(Schema.parseJson(VapiSecrets))

export const layer = Layer.effect(
  ProviderAccounts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, kind: Schema.String }),
      Result: Row,
      execute: ({ kind, orgId }) => sql`SELECT * FROM provider_accounts WHERE org_id = ${orgId} AND kind = ${kind}`
    })
    const byOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: Row,
      execute: (orgId) => sql`SELECT * FROM provider_accounts WHERE org_id = ${orgId} ORDER BY kind`
    })
    // Every stored secret opened once at start (resealSecrets): one that no longer opens is a defect.
    const open = (sealed: string) => Effect.orDie(box.open(sealed))

    return ProviderAccounts.of({
      twilio: (orgId) =>
        storage("providers.twilio")(Effect.gen(function*() {
          const row = yield* find({ orgId, kind: "twilio" })
          if (Option.isNone(row)) return Option.none()
          const secrets = yield* Effect.orDie(decodeTwilioSecrets(yield* open(row.value.secrets)))
          return Option.some<TwilioAccountSettings>({
            kind: "twilio",
            orgId,
            apiBase: row.value.api_base,
            accountSid: row.value.account_id ?? "",
            ...secrets
          })
        })),
      vapi: (orgId) =>
        storage("providers.vapi")(Effect.gen(function*() {
          const row = yield* find({ orgId, kind: "vapi" })
          if (Option.isNone(row)) return Option.none()
          const secrets = yield* Effect.orDie(decodeVapiSecrets(yield* open(row.value.secrets)))
          return Option.some<VapiAccountSettings>({ kind: "vapi", orgId, apiBase: row.value.api_base, ...secrets })
        })),
      set: (account, at) => {
        const secrets = account.kind === "twilio"
          ? Schema.encodeSync(TwilioSecrets)({
            authToken: account.authToken,
            apiKeySid: account.apiKeySid,
            apiKeySecret: account.apiKeySecret,
            messagingServiceSid: account.messagingServiceSid,
            contentApiBase: account.contentApiBase
          })
          : Schema.encodeSync(VapiSecrets)({
            apiKey: account.apiKey,
            webhookSecret: account.webhookSecret,
            signatureHeader: account.signatureHeader,
            timestampHeader: account.timestampHeader,
            payloadFormat: account.payloadFormat,
            credentialHeader: account.credentialHeader
          })
        return storage("providers.set")(sql`INSERT INTO provider_accounts ${
          sql.insert({
            org_id: account.orgId,
            kind: account.kind,
            api_base: account.apiBase,
            account_id: account.kind === "twilio" ? account.accountSid : null,
            secrets: box.seal(JSON.stringify(secrets)),
            updated_at: at
          })
        } ON CONFLICT (org_id, kind) DO UPDATE SET api_base = excluded.api_base, account_id = excluded.account_id,
          secrets = excluded.secrets, updated_at = excluded.updated_at`)
      },
      clear: (orgId, kind) =>
        storage("providers.clear")(Effect.map(
          sql`DELETE FROM provider_accounts WHERE org_id = ${orgId} AND kind = ${kind} RETURNING org_id`,
          (rows) => rows.length > 0
        )),
      list: (orgId) =>
        storage("providers.list")(Effect.map(byOrg(orgId), (rows) =>
          rows.map((r) => ({
            orgId: r.org_id,
            kind: r.kind,
            apiBase: r.api_base,
            accountId: r.account_id,
            updatedAt: r.updated_at
          }))))
    })
  })
)
