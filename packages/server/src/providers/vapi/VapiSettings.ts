/**
 * What an organisation gives Parley to place its AI calls through Vapi (`parley providers set --kind
 * vapi`): its private API key, the secret that authenticates Vapi's server messages, and — for a Vapi
 * credential that does not use Vapi's defaults — the header names and payload format of an HMAC
 * credential or the header of a Bearer credential (VapiServerAuth). All of it is sealed.
 */
import { Either, Schema } from "effect"
import type { SettingField, SettingsInput, SettingsRefusal, StoredSettings } from "../Provider.js"
import { given, HEADER_NAME } from "../ProviderSettings.js"
import type { VapiAccount, VapiServerAuth } from "./VapiClient.js"

export interface VapiSettings extends VapiAccount, VapiServerAuth {
  readonly webhookSecret: string
}

export const VAPI_FIELDS: ReadonlyArray<SettingField> = [
  {
    name: "apiKey",
    flag: "api-key",
    label: "Private API key",
    description: "the private API key",
    secret: true,
    required: true,
    inConsole: true
  },
  {
    name: "webhookSecret",
    flag: "webhook-secret",
    label: "Server message secret",
    description: "the secret of the server URL or credential that authenticates Vapi's server messages",
    secret: true,
    required: true,
    inConsole: true
  },
  {
    name: "signatureHeader",
    flag: "signature-header",
    label: "Signature header (optional)",
    description: "HMAC credential: the signature header (default x-signature)",
    secret: false,
    required: false,
    inConsole: false
  },
  {
    name: "timestampHeader",
    flag: "timestamp-header",
    label: "Timestamp header (optional)",
    description: "HMAC credential: the timestamp header (default x-timestamp)",
    secret: false,
    required: false,
    inConsole: false
  },
  {
    name: "payloadFormat",
    flag: "payload-format",
    label: "Payload format (optional)",
    description: "HMAC credential: what is signed, from {timestamp} {body} {method} {url} {svix-id} (default {timestamp}.{body})",
    secret: false,
    required: false,
    inConsole: false
  },
  {
    name: "messageIdHeader",
    flag: "message-id-header",
    label: "Message id header (optional)",
    description: "HMAC credential: the header whose value {svix-id} stands for (default svix-id)",
    secret: false,
    required: false,
    inConsole: false
  },
  {
    name: "signaturePrefix",
    flag: "signature-prefix",
    label: "Signature prefix (optional)",
    description: "HMAC credential: what precedes the signature, such as sha256= or v1, (default: any name= name: or name,)",
    secret: false,
    required: false,
    inConsole: false
  },
  {
    name: "credentialHeader",
    flag: "credential-header",
    label: "Credential header (optional)",
    description: "Bearer credential: the header carrying the token (default Authorization)",
    secret: false,
    required: false,
    inConsole: false
  }
]

const Sealed = Schema.Struct({
  apiKey: Schema.String,
  webhookSecret: Schema.String,
  signatureHeader: Schema.optional(Schema.String),
  timestampHeader: Schema.optional(Schema.String),
  payloadFormat: Schema.optional(Schema.String),
  credentialHeader: Schema.optional(Schema.String),
  messageIdHeader: Schema.optional(Schema.String),
  signaturePrefix: Schema.optional(Schema.String)
})
const decodeSealed = Schema.decodeUnknownSync(Sealed)

const HEADER_FIELDS = ["signatureHeader", "timestampHeader", "credentialHeader", "messageIdHeader"] as const
/** A signature prefix: a few visible characters, no space (a space separates signatures). */
const SIGNATURE_PREFIX = /^[!-~]{1,32}$/

export const checkVapiSettings = (input: SettingsInput, apiBase: string): Either.Either<VapiSettings, SettingsRefusal> => {
  const refuse = (field: string, message: string) => Either.left({ field, message })
  const apiKey = given(input["apiKey"])
  if (apiKey === undefined) return refuse("apiKey", "is required for Vapi")
  const webhookSecret = given(input["webhookSecret"])
  if (webhookSecret === undefined) return refuse("webhookSecret", "is required for Vapi")
  for (const field of HEADER_FIELDS) {
    const name = given(input[field])
    if (name !== undefined && !HEADER_NAME.test(name)) {
      return refuse(field, `"${name}" must be an HTTP header name, such as x-signature`)
    }
  }
  const payloadFormat = given(input["payloadFormat"])
  if (payloadFormat !== undefined && !payloadFormat.includes("{body}")) {
    return refuse("payloadFormat", `"${payloadFormat}" must include {body}`)
  }
  const signaturePrefix = given(input["signaturePrefix"])
  if (signaturePrefix !== undefined && !SIGNATURE_PREFIX.test(signaturePrefix)) {
    return refuse("signaturePrefix", `"${signaturePrefix}" must be up to 32 visible characters without spaces, such as sha256=`)
  }
  return Either.right({
    apiBase,
    apiKey,
    webhookSecret,
    signatureHeader: given(input["signatureHeader"])?.toLowerCase(),
    timestampHeader: given(input["timestampHeader"])?.toLowerCase(),
    payloadFormat,
    credentialHeader: given(input["credentialHeader"])?.toLowerCase(),
    messageIdHeader: given(input["messageIdHeader"])?.toLowerCase(),
    signaturePrefix
  })
}

export const storeVapiSettings = (settings: VapiSettings): StoredSettings => ({
  apiBase: settings.apiBase,
  accountId: null,
  sealed: Schema.encodeSync(Sealed)({
    apiKey: settings.apiKey,
    webhookSecret: settings.webhookSecret,
    signatureHeader: settings.signatureHeader,
    timestampHeader: settings.timestampHeader,
    payloadFormat: settings.payloadFormat,
    credentialHeader: settings.credentialHeader,
    messageIdHeader: settings.messageIdHeader,
    signaturePrefix: settings.signaturePrefix
  })
})

export const readVapiSettings = (stored: StoredSettings): VapiSettings => ({
  apiBase: stored.apiBase,
  ...decodeSealed(stored.sealed)
})
