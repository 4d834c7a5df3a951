/**
 * The rules for an organisation's provider account, in one place for `parley providers set` and the
 * console's Providers page: Twilio needs an Account SID (AC + 32 hex digits) and its Auth Token, and
 * optionally an API key pair (both or neither) and a Messaging Service; Vapi needs its private API key and
 * the secret it sends with server messages; the API base, when given, is an http(s) URL. A refusal names
 * its field, so each caller shows it where the value was given (a flag, a form field).
 */
import { Either } from "effect"
import { DEFAULT_API_BASE, type ProviderAccount, type ProviderKind } from "../store/SqlProviderAccounts.js"

export type ProviderField =
  | "apiBase"
  | "accountSid"
  | "authToken"
  | "apiKeySid"
  | "apiKeySecret"
  | "messagingServiceSid"
  | "apiKey"
  | "webhookSecret"
  | "contentApiBase"
  | "signatureHeader"
  | "timestampHeader"
  | "payloadFormat"
  | "credentialHeader"

export interface ProviderRefusal {
  readonly field: ProviderField
  readonly message: string
}

/** What was given; empty strings count as not given. */
export interface ProviderInput {
  readonly kind: ProviderKind
  readonly orgId: string
  readonly apiBase?: string | undefined
  readonly accountSid?: string | undefined
  readonly authToken?: string | undefined
  readonly apiKeySid?: string | undefined
  readonly apiKeySecret?: string | undefined
  readonly messagingServiceSid?: string | undefined
  readonly apiKey?: string | undefined
  readonly webhookSecret?: string | undefined
  /** Twilio's Content API base (templates' text); default: the API base when one is given, else Twilio's. */
  readonly contentApiBase?: string | undefined
  /** Vapi credentials that do not use Vapi's defaults (VapiServerAuth). */
  readonly signatureHeader?: string | undefined
  readonly timestampHeader?: string | undefined
  readonly payloadFormat?: string | undefined
  readonly credentialHeader?: string | undefined
}

const HTTP_URL = /^https?:\/\/[^\s/]+(\/\S*)?$/
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

const given = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

export const providerAccount = (input: ProviderInput): Either.Either<ProviderAccount, ProviderRefusal> => {
  const refuse = (field: ProviderField, message: string) => Either.left({ field, message })
  let apiBase = DEFAULT_API_BASE[input.kind]
  const base = given(input.apiBase)
  if (base !== undefined) {
    apiBase = base.replace(/\/+$/, "")
    if (!HTTP_URL.test(apiBase)) {
      return refuse("apiBase", `"${base}" must be an http:// or https:// URL, such as ${DEFAULT_API_BASE[input.kind]}`)
    }
  }
  if (input.kind === "twilio") {
    const accountSid = given(input.accountSid)
    if (accountSid === undefined) return refuse("accountSid", "is required for Twilio")
    if (!/^AC[0-9a-fA-F]{32}$/.test(accountSid)) {
      return refuse("accountSid", `"${accountSid}" must be AC followed by 32 hex digits (Twilio Console → Account Info)`)
    }
    const authToken = given(input.authToken)
    if (authToken === undefined) return refuse("authToken", "is required for Twilio")
    const apiKeySid = given(input.apiKeySid)
    const apiKeySecret = given(input.apiKeySecret)
    if ((apiKeySid === undefined) !== (apiKeySecret === undefined)) {
      return refuse(apiKeySid === undefined ? "apiKeySid" : "apiKeySecret", "the API key SID and its secret go together")
    }
    const messagingServiceSid = given(input.messagingServiceSid)
    if (messagingServiceSid !== undefined && !/^MG[0-9a-fA-F]{32}$/.test(messagingServiceSid)) {
      return refuse("messagingServiceSid", `"${messagingServiceSid}" must be MG followed by 32 hex digits`)
    }
    const content = given(input.contentApiBase)?.replace(/\/+$/, "")
    if (content !== undefined && !HTTP_URL.test(content)) {
      return refuse("contentApiBase", `"${content}" must be an http:// or https:// URL, such as https://content.twilio.com`)
    }
    return Either.right({
      kind: "twilio",
      orgId: input.orgId,
      apiBase,
      accountSid,
      authToken,
      apiKeySid,
      apiKeySecret,
      messagingServiceSid,
      // A local fake or a proxy given as the API base stands for the Content API too.
      contentApiBase: content ?? (base === undefined ? undefined : apiBase)
    })
  }
  const apiKey = given(input.apiKey)
  if (apiKey === undefined) return refuse("apiKey", "is required for Vapi")
  const webhookSecret = given(input.webhookSecret)
  if (webhookSecret === undefined) return refuse("webhookSecret", "is required for Vapi")
  const headers = { signatureHeader: input.signatureHeader, timestampHeader: input.timestampHeader, credentialHeader: input.credentialHeader }
  for (const [field, value] of Object.entries(headers)) {
    const name = given(value)
    if (name !== undefined && !HEADER_NAME.test(name)) {
      return refuse(field === "signatureHeader" ? "signatureHeader" : field === "timestampHeader" ? "timestampHeader" : "credentialHeader",
        `"${name}" must be an HTTP header name, such as x-signature`)
    }
  }
  const payloadFormat = given(input.payloadFormat)
  if (payloadFormat !== undefined && !payloadFormat.includes("{body}")) {
    return refuse("payloadFormat", `"${payloadFormat}" must include {body}`)
  }
  return Either.right({
    kind: "vapi",
    orgId: input.orgId,
    apiBase,
    apiKey,
    webhookSecret,
    signatureHeader: given(input.signatureHeader)?.toLowerCase(),
    timestampHeader: given(input.timestampHeader)?.toLowerCase(),
    payloadFormat,
    credentialHeader: given(input.credentialHeader)?.toLowerCase()
  })
}
