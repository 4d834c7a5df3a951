/**
 * The carrier's inbound webhook: `POST /providers/twilio/inbound` (and its
 * first name, `POST /carrier/inbound`), Twilio-compatible (form fields `From`,
 * `To`, `Body`, `MessageSid`, `NumMedia`, `MediaUrl0`…; a `whatsapp:` prefix
 * marks a WhatsApp message). The organisation is the one that owns the `To`
 * number; `From` is an E.164 number (7 digits and up: Niue's `+6834002`), a
 * short code or an alphanumeric sender ID (the core's PhoneOrShortCode).
 *
 * The request must carry Twilio's `X-Twilio-Signature` (base64 HMAC-SHA1 of the
 * full URL followed by every form field's name and value in name order) made
 * with the organisation's Twilio auth token when it has connected Twilio
 * (`parley providers set`), else with PARLEY_CARRIER_AUTH_TOKEN when that is
 * set. With neither, the message is refused unless the operator opted in to
 * unsigned inbound messages (PARLEY_INBOUND_UNSIGNED=accept): a forged one
 * would open a WhatsApp session. Every message that cannot be verified gets
 * the same 401. The URL is PARLEY_PUBLIC_URL + path when set (behind a proxy),
 * else http:// + Host.
 *
 * A message with media (an MMS, also a media-only one with an empty `Body`) is
 * taken: its media URLs are kept in the record's `mediaUrls`, apart from the
 * text in `body`, so the API and events show both. A WhatsApp location (empty
 * `Body`, `Latitude`/`Longitude`, optional `Address`/`Label`) is taken too: the
 * contract's record has no place for a location, so its text is rendered into
 * `body` (locationText below; README, "Locations"). A message taken is answered with TwiML and no reply, as Twilio
 * expects; anything else in the error shape of /api/v1 (`code`, `message`,
 * `requestId`). The request pipeline reads the body first (form-encoded, under
 * the size limit: 413 otherwise), as for /api/v1; CallbackGate bounds the work
 * per source address and per organisation.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  CrmUnavailable,
  Inbound,
  InvalidRequest,
  NotFound,
  Organisations,
  PhoneOrShortCode,
  SetupUnavailable
} from "@parley/core/internal"
import { Clock, Effect, Option, Redacted, Schema } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { ServerConfig } from "../../config/ServerConfig.js"
import { refusal } from "../../http/ErrorResponses.js"
import type { PlainRoute } from "../../http/PlainRoutes.js"
import { ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import { CallbackGate, KEY_CACHE_MS, TtlCache } from "../CallbackGate.js"
import { requestUrl } from "../CallbackUrls.js"
import { admissionError, callbacksBusy, carriesAny, chargeUnverified, notAdmitted, unverified } from "../ProviderCallbacks.js"
import { TWILIO_SIGNATURE_HEADER, verifyTwilioSignature } from "./TwilioSignature.js"
import { readTwilioSettings, type TwilioSettings } from "./TwilioSettings.js"

export const CARRIER_INBOUND_PATH = "/carrier/inbound"
export const TWILIO_INBOUND_PATH = "/providers/twilio/inbound"

const EMPTY_TWIML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`
/** Parley's lines are E.164 numbers as the contract defines them (8 digits and up). */
const E164 = /^\+[1-9]\d{7,14}$/
/** Twilio delivers messages from short codes (`From=89898`), alphanumeric sender IDs and short national numbers too. */
const isSender = Schema.is(PhoneOrShortCode)

const taken = () => HttpServerResponse.text(EMPTY_TWIML, { contentType: "text/xml" })


const parse = (address: string) => {
  const whatsApp = address.startsWith("whatsapp:")
  return { channel: whatsApp ? "WhatsApp" as const : "SMS" as const, number: whatsApp ? address.slice(9) : address }
}

/**
 * The media URLs of a message, in Twilio's order (`MediaUrl0`…, as many as `NumMedia` says, at most 10). Only
 * absolute http(s) URLs are kept, dropped rather than refused: the field promises URLs a client may fetch, a
 * request signed with the server-wide token (or an unsigned one) could name anything, and refusing would lose
 * the message's text with it.
 */
export const mediaUrls = (field: (name: string) => string): ReadonlyArray<string> => {
  const count = Math.min(Inbound.MAX_MEDIA, Number.parseInt(field("NumMedia"), 10) || 0)
  return Array.from({ length: count }, (_, i) => field(`MediaUrl${i}`)).filter(Inbound.isMediaUrl)
}

/** A decimal degree as Twilio writes one; anything else (`NaN`, `1e3`, hex) is no coordinate. */
const DEGREES = /^-?\d{1,3}(\.\d+)?$/
const degrees = (text: string, limit: number): boolean => DEGREES.test(text) && Math.abs(Number(text)) <= limit

/**
 * The text of a shared WhatsApp location (`Latitude`, `Longitude`, optional `Label` and `Address`), or "" when
 * the message carries none: `Location: Label, Address (geo:lat,lon)`. A `geo:` URI (RFC 5870) because it names
 * the point without naming a maps vendor, and phones open it; the coordinates are kept as Twilio wrote them.
 */
export const locationText = (field: (name: string) => string): string => {
  const latitude = field("Latitude").trim()
  const longitude = field("Longitude").trim()
  if (!degrees(latitude, 90) || !degrees(longitude, 180)) return ""
  const named = [field("Label").trim(), field("Address").trim()].filter((part) => part !== "")
  return `Location: ${named.length === 0 ? "" : `${named.join(", ")} `}(geo:${latitude},${longitude})`
}

/** The record's text: the message's `Body`, then its location on a line of its own when it shares one. */
const bodyText = (field: (name: string) => string): string =>
  [field("Body"), locationText(field)].filter((part) => part !== "").join("\n")

export const twilioInboundRoutes = Effect.gen(function*() {
  const config = yield* ServerConfig
  const organisations = yield* Organisations.Organisations
  const inbound = yield* Inbound.Inbound
  const accounts = yield* ProviderAccounts
  const gate = yield* CallbackGate
  const keys = new TtlCache<Option.Option<TwilioSettings>>(KEY_CACHE_MS)
  const receive = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const now = yield* Clock.currentTimeMillis
    // The source passed the gate before the body was read (admit below); the organisation is known from `To`.
    const form = yield* request.urlParamsBody
    const params = form.map(([k, v]) => [k, v] as const)
    const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
    const from = parse(field("From"))
    const to = parse(field("To"))
    if (!isSender(from.number) || !E164.test(to.number)) {
      return yield* refusal(new InvalidRequest({
        message: "From must be an E.164 number, a short code or an alphanumeric sender ID, To an E.164 number."
      }))
    }
    const work = Effect.gen(function*() {
      const [line] = yield* organisations.findNumbersByPhone(to.number)
      if (line !== undefined) {
        // Let on past its source's budget only to be verified (CallbackGate.admit): nothing taken before it is.
        const source = Option.getOrElse(request.remoteAddress, () => "unknown")
        const admission = gate.overBudget(source, now) ? "admitted" : gate.admitOrganisation(line.orgId, now)
        if (admission !== "admitted") return yield* notAdmitted(admission)
      }
      // The organisation's own Twilio account signs its inbound traffic; otherwise the server-wide token, if any.
      const own = line === undefined ? Option.none() : yield* keys.get(line.orgId, now, Effect.map(accounts.find(line.orgId, "twilio"), Option.map(readTwilioSettings)))
      const token = Option.orElse(
        Option.map(own, (account) => account.authToken),
        () => Option.map(config.carrierAuthToken, Redacted.value)
      )
      if (Option.isSome(token)) {
        const url = requestUrl(config, request.headers.host, request.url)
        if (!verifyTwilioSignature(token.value, url, params, request.headers[TWILIO_SIGNATURE_HEADER])) {
          return yield* unverified()
        }
      } else if (config.inboundUnsigned !== "accept") {
        return yield* unverified()
      }
      if (line === undefined) return yield* refusal(new NotFound({ message: `${to.number} is not a Parley number.` }))
      const sid = field("MessageSid")
      yield* inbound.receive({
        orgId: line.orgId,
        from: from.number,
        to: to.number,
        body: bodyText(field),
        mediaUrls: mediaUrls(field),
        channel: to.channel === "WhatsApp" || from.channel === "WhatsApp" ? "WhatsApp" : "SMS",
        sid: sid === "" ? undefined : sid
      })
      return taken()
    })
    const outcome = yield* gate.run(work)
    return outcome._tag === "Busy" ? yield* callbacksBusy() : outcome.value
  }).pipe(
    Effect.catchTag("InboundRejected", (rejected) => refusal(new InvalidRequest({ message: rejected.message }))),
    Effect.catchTag("StorageError", () =>
      refusal(new SetupUnavailable({ message: "Parley's storage is unavailable; retry shortly." }))),
    Effect.catchTag("CrmError", () => refusal(new CrmUnavailable({ message: "The CRM did not answer; retry shortly." }))),
    Effect.catchAll(() => refusal(new InvalidRequest({ message: "The body must be form-encoded." })))
  )
  /** The gate, before the body is read: the source (and the shared bucket of callbacks naming no organisation yet). */
  const admit = (source: string, _url: string, now: number, headers: IncomingHttpHeaders) =>
    admissionError(gate.admit(source, "", now, carriesAny(headers, [TWILIO_SIGNATURE_HEADER])))
  // The provider-named path is the one to paste into Twilio's console; the first stays for existing set-ups.
  return [
    { method: "POST", path: CARRIER_INBOUND_PATH, body: "form", handler: receive, admit, unverified: chargeUnverified(gate) },
    { method: "POST", path: TWILIO_INBOUND_PATH, body: "form", handler: receive, admit, unverified: chargeUnverified(gate) }
  ] satisfies ReadonlyArray<PlainRoute>
})
