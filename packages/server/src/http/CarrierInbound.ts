/**
 * The carrier's inbound webhook: `POST /providers/twilio/inbound` (and its
 * first name, `POST /carrier/inbound`), Twilio-compatible (form fields `From`,
 * `To`, `Body`, `MessageSid`; a `whatsapp:` prefix marks a WhatsApp message).
 * The organisation is the one that owns the `To` number.
 *
 * The request must carry Twilio's `X-Twilio-Signature` (base64 HMAC-SHA1 of the
 * full URL followed by every form field's name and value in name order) made
 * with the organisation's Twilio auth token when it has connected Twilio
 * (`parley providers set`), else with PARLEY_CARRIER_AUTH_TOKEN when that is
 * set. The URL is PARLEY_PUBLIC_URL + path when set (behind a proxy), else
 * http:// + Host.
 * A message taken is answered with TwiML and no reply, as Twilio expects;
 * anything else in the error shape of /api/v1 (`code`, `message`,
 * `requestId`). The request pipeline reads the body first (form-encoded, under
 * the size limit: 413 otherwise), as for /api/v1.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  CrmUnavailable,
  Inbound,
  InvalidRequest,
  NotFound,
  Organisations,
  SetupUnavailable,
  Unauthorized
} from "@parley/core/internal"
import { Effect, Option, Redacted } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { requestUrl, TWILIO_INBOUND_PATH } from "../providers/CallbackUrls.js"
import { verifyTwilioSignature } from "../providers/twilio/TwilioSignature.js"
import { ProviderAccounts } from "../store/SqlProviderAccounts.js"
import { refusal } from "./ErrorResponses.js"
import type { PlainRoute } from "./PlainRoutes.js"

export const CARRIER_INBOUND_PATH = "/carrier/inbound"

const EMPTY_TWIML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`
const E164 = /^\+[1-9]\d{7,14}$/

/** Kept for callers of the first release; the algorithm lives with the Twilio client. */
export { twilioSignature } from "../providers/twilio/TwilioSignature.js"

const taken = () => HttpServerResponse.text(EMPTY_TWIML, { contentType: "text/xml" })


const parse = (address: string) => {
  const whatsApp = address.startsWith("whatsapp:")
  return { channel: whatsApp ? "WhatsApp" as const : "SMS" as const, number: whatsApp ? address.slice(9) : address }
}

export const carrierInboundRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const organisations = yield* Organisations.Organisations
  const inbound = yield* Inbound.Inbound
  const accounts = yield* ProviderAccounts
  const receive = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const form = yield* request.urlParamsBody
    const params = form.map(([k, v]) => [k, v] as const)
    const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
    const from = parse(field("From"))
    const to = parse(field("To"))
    if (!E164.test(from.number) || !E164.test(to.number)) {
      return yield* refusal(new InvalidRequest({ message: "From and To must be E.164 numbers." }))
    }
    const [line] = yield* organisations.findNumbersByPhone(to.number)
    // The organisation's own Twilio account signs its inbound traffic; otherwise the server-wide token, if any.
    const token = line === undefined
      ? Option.map(config.carrierAuthToken, Redacted.value)
      : Option.orElse(
        Option.map(yield* accounts.twilio(line.orgId), (account) => account.authToken),
        () => Option.map(config.carrierAuthToken, Redacted.value)
      )
    if (Option.isSome(token)) {
      const url = requestUrl(config, request.headers.host, request.url)
      if (!verifyTwilioSignature(token.value, url, params, request.headers["x-twilio-signature"])) {
        return yield* refusal(new Unauthorized({ message: "X-Twilio-Signature does not match." }))
      }
    }
    if (line === undefined) return yield* refusal(new NotFound({ message: `${to.number} is not a Parley number.` }))
    const sid = field("MessageSid")
    yield* inbound.receive({
      orgId: line.orgId,
      from: from.number,
      to: to.number,
      body: field("Body"),
      channel: to.channel === "WhatsApp" || from.channel === "WhatsApp" ? "WhatsApp" : "SMS",
      sid: sid === "" ? undefined : sid
    })
    return taken()
  }).pipe(
    Effect.catchTag("InboundRejected", (rejected) => refusal(new InvalidRequest({ message: rejected.message }))),
    Effect.catchTag("StorageError", () =>
      refusal(new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." }))),
    Effect.catchTag("CrmError", () => refusal(new CrmUnavailable({ message: "The CRM did not answer; retry shortly." }))),
    Effect.catchAll(() => refusal(new InvalidRequest({ message: "The body must be form-encoded." })))
  )
  // The provider-named path is the one to paste into Twilio's console; the first stays for existing set-ups.
  return [
    { method: "POST", path: CARRIER_INBOUND_PATH, body: "form", handler: receive },
    { method: "POST", path: TWILIO_INBOUND_PATH, body: "form", handler: receive }
  ] satisfies ReadonlyArray<PlainRoute>
})
