/**
 * The carrier's inbound webhook: `POST /carrier/inbound`, Twilio-compatible
 * (form fields `From`, `To`, `Body`, `MessageSid`; a `whatsapp:` prefix marks a
 * WhatsApp message). The organisation is the one that owns the `To` number.
 *
 * When PARLEY_CARRIER_AUTH_TOKEN is set, the request must carry Twilio's
 * `X-Twilio-Signature`: base64 HMAC-SHA1, keyed with the token, of the full
 * URL followed by every form field's name and value in name order. The URL is
 * PARLEY_PUBLIC_URL + path when set (behind a proxy), else http:// + Host.
 * Answers are TwiML with no reply, as Twilio expects.
 */
import { createHmac } from "node:crypto"
import { HttpApiBuilder, HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Crypto, Inbound, Organisations } from "@parley/core"
import { Effect, Option, Redacted } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"

const EMPTY_TWIML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`
const E164 = /^\+[1-9]\d{7,14}$/

export const twilioSignature = (token: string, url: string, params: ReadonlyArray<readonly [string, string]>) =>
  createHmac("sha1", token)
    .update(url + [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => k + v).join(""))
    .digest("base64")

const reply = (status: number, detail?: string) =>
  status === 200
    ? HttpServerResponse.text(EMPTY_TWIML, { contentType: "text/xml" })
    : HttpServerResponse.unsafeJson({ error: { message: detail ?? "rejected" } }, { status })

const parse = (address: string) => {
  const whatsApp = address.startsWith("whatsapp:")
  return { channel: whatsApp ? "WhatsApp" as const : "SMS" as const, number: whatsApp ? address.slice(9) : address }
}

export const CarrierInboundLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const organisations = yield* Organisations.Organisations
    const inbound = yield* Inbound.Inbound
    yield* router.post(
      "/carrier/inbound",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const form = yield* HttpIncomingMessage.withMaxBodySize(request.urlParamsBody, Option.some(config.maxBodyBytes))
        const params = form.map(([k, v]) => [k, v] as const)
        const field = (name: string) => params.find(([k]) => k === name)?.[1] ?? ""
        if (Option.isSome(config.carrierAuthToken)) {
          const url = Option.match(config.publicUrl, {
            onNone: () => `http://${request.headers.host ?? "localhost"}${request.url}`,
            onSome: (base) => base.replace(/\/$/, "") + request.url
          })
          const expected = twilioSignature(Redacted.value(config.carrierAuthToken.value), url, params)
          if (!Crypto.constantTimeEqual(expected, request.headers["x-twilio-signature"] ?? "")) {
            return reply(403, "X-Twilio-Signature does not match")
          }
        }
        const from = parse(field("From"))
        const to = parse(field("To"))
        if (!E164.test(from.number) || !E164.test(to.number)) return reply(400, "From and To must be E.164 numbers")
        const [line] = yield* organisations.findNumbersByPhone(to.number)
        if (line === undefined) return reply(404, `${to.number} is not a Parley number`)
        const sid = field("MessageSid")
        yield* inbound.receive({
          orgId: line.orgId,
          from: from.number,
          to: to.number,
          body: field("Body"),
          channel: to.channel === "WhatsApp" || from.channel === "WhatsApp" ? "WhatsApp" : "SMS",
          sid: sid === "" ? undefined : sid
        })
        return reply(200)
      }).pipe(
        Effect.catchTag("InboundRejected", (rejected) => Effect.succeed(reply(422, rejected.message))),
        Effect.catchTag("StorageError", () => Effect.succeed(reply(503, "storage unavailable"))),
        Effect.catchTag("CrmError", () => Effect.succeed(reply(502, "CRM unavailable"))),
        Effect.catchAll(() => Effect.succeed(reply(400, "the body must be form-encoded")))
      )
    )
  })
)
