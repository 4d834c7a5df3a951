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
}

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
    if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(apiBase)) {
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
    return Either.right({
      kind: "twilio",
      orgId: input.orgId,
      apiBase,
      accountSid,
      authToken,
      apiKeySid,
      apiKeySecret,
      messagingServiceSid: given(input.messagingServiceSid)
    })
  }
  const apiKey = given(input.apiKey)
  if (apiKey === undefined) return refuse("apiKey", "is required for Vapi")
  const webhookSecret = given(input.webhookSecret)
  if (webhookSecret === undefined) return refuse("webhookSecret", "is required for Vapi")
  return Either.right({ kind: "vapi", orgId: input.orgId, apiBase, apiKey, webhookSecret })
}
