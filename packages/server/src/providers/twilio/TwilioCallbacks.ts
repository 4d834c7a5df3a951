/**
 * Twilio's message status callbacks, `POST /providers/twilio/status`: form
 * fields `MessageSid`, `MessageStatus`, `ErrorCode`…, signed with the
 * organisation's auth token (`X-Twilio-Signature` over the public URL and the
 * sorted fields). The organisation and action ride in the URL Parley gave
 * Twilio, which the signature covers. What every callback route shares is in
 * ProviderCallbacks.
 */
import { Effect } from "effect"
import { callbackRoute, done } from "../ProviderCallbacks.js"
import * as Twilio from "./TwilioClient.js"
import { TWILIO_SIGNATURE_HEADER } from "./TwilioSignature.js"
import { readTwilioSettings } from "./TwilioSettings.js"
import { twilioMessageStatus } from "./TwilioStatuses.js"

export const TWILIO_STATUS_PATH = "/providers/twilio/status"

/** Twilio sends only the code; the text says where it is explained. */
const twilioError = (code: string): string => `${code}: see https://www.twilio.com/docs/api/errors/${code}`

type Fields = ReadonlyArray<readonly [string, string]>

export const twilioCallbackRoutes = callbackRoute({
  provider: "twilio",
  path: TWILIO_STATUS_PATH,
  bodyKind: "form",
  signatureHeaders: [TWILIO_SIGNATURE_HEADER],
  kind: "message",
  settings: readTwilioSettings,
  read: (request) => Effect.map(request.urlParamsBody, (params): Fields => params.map(([k, v]) => [k, v] as const)),
  verify: (settings, { body, request, url }) =>
    Twilio.verifyTwilioSignature(settings.authToken, url, body, request.headers[TWILIO_SIGNATURE_HEADER]),
  report: (params, query) => {
    const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
    const raw = field("MessageStatus") || field("SmsStatus")
    const status = twilioMessageStatus(raw)
    if (status === null) return null
    const errorCode = field("ErrorCode")
    return {
      report: {
        status,
        providerStatus: raw,
        sid: field("MessageSid") || field("SmsSid"),
        errorMessage: errorCode === "" || errorCode === "0" ? undefined : twilioError(errorCode)
      },
      actionId: query.get("action") ?? ""
    }
  },
  // The status callback URL Parley gave Twilio names the action, and the signature covers it.
  findsBySid: false,
  unknownAction: ({ actionId }) => `No message ${actionId}.`,
  notHandedOver: "not handed to Twilio under this MessageSid",
  answer: done
})
