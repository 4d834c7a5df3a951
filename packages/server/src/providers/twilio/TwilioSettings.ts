/**
 * What an organisation gives Parley to send its texts and WhatsApp through Twilio (`parley providers set
 * --kind twilio`): the Account SID (AC + 32 hex digits) and its Auth Token, optionally an API key pair
 * (both or neither) to send with instead, a Messaging Service (MG + 32 hex digits), and where Twilio's
 * Content API is (templates' text). The Account SID and API base are shown; the rest is sealed.
 */
import { Either, Schema } from "effect"
import type { SettingField, SettingsInput, SettingsRefusal, StoredSettings } from "../Provider.js"
import { given, optionalUrl } from "../ProviderSettings.js"
import { TWILIO_CONTENT_API_BASE, type TwilioAccount } from "./TwilioClient.js"

export interface TwilioSettings extends TwilioAccount {
  readonly messagingServiceSid?: string | undefined
}

export const TWILIO_FIELDS: ReadonlyArray<SettingField> = [
  {
    name: "accountSid",
    flag: "account-sid",
    label: "Account SID",
    description: "the Account SID: AC followed by 32 hex digits (Twilio Console → Account Info)",
    secret: false,
    required: true,
    inConsole: true
  },
  {
    name: "authToken",
    flag: "auth-token",
    label: "Auth Token",
    description: "the Auth Token (also checks X-Twilio-Signature on callbacks)",
    secret: true,
    required: true,
    inConsole: true
  },
  {
    name: "apiKeySid",
    flag: "api-key-sid",
    label: "API key SID (optional)",
    description: "an API key SID (SK…) to send with instead of the Auth Token",
    secret: false,
    required: false,
    inConsole: true
  },
  {
    name: "apiKeySecret",
    flag: "api-key-secret",
    label: "API key secret (optional)",
    description: "that API key's secret",
    secret: true,
    required: false,
    inConsole: true
  },
  {
    name: "messagingServiceSid",
    flag: "messaging-service-sid",
    label: "Messaging Service SID (optional)",
    description: "send through this Messaging Service (MG…)",
    secret: false,
    required: false,
    inConsole: true
  },
  {
    name: "contentApiBase",
    flag: "content-api-base",
    label: "Content API base (optional)",
    description: `the Content API base URL for templates' text (default ${TWILIO_CONTENT_API_BASE}, whatever --api-base is)`,
    secret: false,
    required: false,
    inConsole: false
  }
]

// The sealed part: secrets, and beside them the settings that are no secret but go with them.
const Sealed = Schema.Struct({
  authToken: Schema.String,
  apiKeySid: Schema.optional(Schema.String),
  apiKeySecret: Schema.optional(Schema.String),
  messagingServiceSid: Schema.optional(Schema.String),
  contentApiBase: Schema.optional(Schema.String)
})
const decodeSealed = Schema.decodeUnknownSync(Sealed)

export const checkTwilioSettings = (input: SettingsInput, apiBase: string): Either.Either<TwilioSettings, SettingsRefusal> => {
  const refuse = (field: string, message: string) => Either.left({ field, message })
  const accountSid = given(input["accountSid"])
  if (accountSid === undefined) return refuse("accountSid", "is required for Twilio")
  if (!/^AC[0-9a-fA-F]{32}$/.test(accountSid)) {
    return refuse("accountSid", `"${accountSid}" must be AC followed by 32 hex digits (Twilio Console → Account Info)`)
  }
  const authToken = given(input["authToken"])
  if (authToken === undefined) return refuse("authToken", "is required for Twilio")
  const apiKeySid = given(input["apiKeySid"])
  const apiKeySecret = given(input["apiKeySecret"])
  if ((apiKeySid === undefined) !== (apiKeySecret === undefined)) {
    return refuse(apiKeySid === undefined ? "apiKeySid" : "apiKeySecret", "the API key SID and its secret go together")
  }
  const messagingServiceSid = given(input["messagingServiceSid"])
  if (messagingServiceSid !== undefined && !/^MG[0-9a-fA-F]{32}$/.test(messagingServiceSid)) {
    return refuse("messagingServiceSid", `"${messagingServiceSid}" must be MG followed by 32 hex digits`)
  }
  return Either.map(optionalUrl("contentApiBase", input["contentApiBase"], TWILIO_CONTENT_API_BASE), (content) => ({
    apiBase,
    accountSid,
    authToken,
    apiKeySid,
    apiKeySecret,
    messagingServiceSid,
    // Its own setting: the REST base (a regional edge, say) does not serve the Content API.
    contentApiBase: content
  }))
}

export const storeTwilioSettings = (settings: TwilioSettings): StoredSettings => ({
  apiBase: settings.apiBase,
  accountId: settings.accountSid,
  sealed: Schema.encodeSync(Sealed)({
    authToken: settings.authToken,
    apiKeySid: settings.apiKeySid,
    apiKeySecret: settings.apiKeySecret,
    messagingServiceSid: settings.messagingServiceSid,
    contentApiBase: settings.contentApiBase
  })
})

/**
 * Settings stored before the Content API base was its own setting copied the REST base into it when only
 * `--api-base` was given; on one of Twilio's own hosts that copy can only be that default (no twilio.com
 * REST host serves the Content API), so it is read as unset. A local fake or proxy keeps what was stored.
 */
const contentBaseOf = (apiBase: string, contentApiBase: string | undefined): string | undefined => {
  if (contentApiBase === undefined || contentApiBase !== apiBase || !URL.canParse(apiBase)) return contentApiBase
  const host = new URL(apiBase).hostname
  return host === "twilio.com" || host.endsWith(".twilio.com") ? undefined : contentApiBase
}

export const readTwilioSettings = (stored: StoredSettings): TwilioSettings => {
  const sealed = decodeSealed(stored.sealed)
  return {
    apiBase: stored.apiBase,
    accountSid: stored.accountId ?? "",
    ...sealed,
    contentApiBase: contentBaseOf(stored.apiBase, sealed.contentApiBase)
  }
}

