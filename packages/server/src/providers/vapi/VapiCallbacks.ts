/**
 * Vapi's server messages, `POST /providers/vapi/events?org=ORG`
 * (`status-update`, `end-of-call-report`), authenticated with the
 * organisation's webhook secret in any of Vapi's credential modes
 * (VapiClient.verifyVapiSecret); the action is the one Vapi's call id was
 * recorded on, else the one named in the call's metadata. What every callback
 * route shares is in ProviderCallbacks.
 */
import { HttpServerResponse } from "@effect/platform"
import { InvalidRequest } from "@parley/core/internal"
import { Effect, Either } from "effect"
import { callbackRoute, namedInMetadata } from "../ProviderCallbacks.js"
import * as Vapi from "./VapiClient.js"
import { callMetadata, toCallReport } from "./VapiReports.js"
import { readVapiSettings } from "./VapiSettings.js"

export const VAPI_EVENTS_PATH = "/providers/vapi/events"

/** A server message as read: the raw body is what its signature covers. */
interface VapiCallback {
  readonly raw: string
  readonly message: Vapi.VapiServerMessage
}

export const vapiCallbackRoutes = callbackRoute({
  provider: "vapi",
  path: VAPI_EVENTS_PATH,
  bodyKind: "json",
  // Vapi's default credential headers; a callback signed under a header the organisation renamed is
  // verified only while its address is within its budget.
  signatureHeaders: Vapi.DEFAULT_SECRET_HEADERS,
  kind: "ai_call",
  settings: readVapiSettings,
  read: (request) =>
    Effect.gen(function*() {
      const raw = yield* request.text
      const json = yield* Effect.try(() => JSON.parse(raw) as unknown)
      const decoded = Vapi.decodeServerMessage(json)
      if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: "Not a Vapi server message." })
      return { raw, message: decoded.right } satisfies VapiCallback
    }),
  ...namedInMetadata((callback: VapiCallback) => callMetadata(callback.message), (callback) => toCallReport(callback.message)),
  verify: (settings, { body, now, request, url }) =>
    Vapi.verifyVapiSecret(
      settings.webhookSecret,
      { headers: request.headers, rawBody: body.raw, method: request.method, url, now },
      settings
    ),
  // The call id Parley recorded when Vapi answered comes first: a call Vapi reports without Parley's
  // metadata is still found. The metadata serves for a report that beats Vapi's answer.
  findsBySid: true,
  unknownAction: ({ report }) => `No AI call for Vapi call ${report.sid}.`,
  notHandedOver: "not handed to Vapi under this call id",
  answer: () => HttpServerResponse.unsafeJson({})
})
