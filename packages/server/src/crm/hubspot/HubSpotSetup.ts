/**
 * `parley crm setup ORG` for HubSpot: the properties Parley keeps in the portal — `parley_key` on calls and
 * communications (idempotent creation: the key each object was created under), `parley_error` on both and
 * `parley_status` on communications (the write-back: HubSpot's communications have no status), and `parley_sms_opt_out` on
 * contacts (the consent work reads and sets it). An existing property is left as it is; a refusal (the grant
 * lacks the schema scope) is reported for an administrator to act on.
 */
import type { Crm } from "@parley/core/domain"
import { Effect } from "effect"
import { ERROR_PROPERTY, KEY_PROPERTY, OPT_OUT_PROPERTY, STATUS_PROPERTY } from "./HubSpotRecords.js"
import type { HubSpotSessionService } from "./HubSpotSession.js"

const PROPERTIES: ReadonlyArray<{ readonly objectType: string; readonly body: Readonly<Record<string, unknown>> }> = [
  ...["calls", "communications"].map((objectType) => ({
    objectType,
    body: {
      name: KEY_PROPERTY,
      label: "Parley key",
      description: "The key Parley created this activity under (so a retried creation finds it instead of making another).",
      groupName: `${objectType === "calls" ? "call" : "communication"}information`,
      type: "string",
      fieldType: "text",
      hidden: true
    }
  })),
  {
    objectType: "communications",
    body: {
      name: STATUS_PROPERTY,
      label: "Parley status",
      description: "Where the text is: Queued, Sending, Sent, Delivered, Undelivered, Failed, Cancelled or Received (Parley writes it back).",
      groupName: "communicationinformation",
      type: "string",
      fieldType: "text"
    }
  },
  ...["calls", "communications"].map((objectType) => ({
    objectType,
    body: {
      name: ERROR_PROPERTY,
      label: "Parley error",
      description: "Why the text or call failed, as the carrier or the AI-call provider said; empty while it has not.",
      groupName: `${objectType === "calls" ? "call" : "communication"}information`,
      type: "string",
      fieldType: "textarea"
    }
  })),
  {
    objectType: "contacts",
    body: {
      name: OPT_OUT_PROPERTY,
      label: "Parley SMS opt-out",
      description: "Set by Parley when the contact opts out of texts; Parley sends them none while it is set.",
      groupName: "contactinformation",
      type: "bool",
      fieldType: "booleancheckbox",
      options: [{ label: "Yes", value: "true", displayOrder: 0 }, { label: "No", value: "false", displayOrder: 1 }]
    }
  }
]

export interface HubSpotSetupReport {
  readonly created: ReadonlyArray<string>
  readonly existing: ReadonlyArray<string>
  readonly byHand: ReadonlyArray<string>
}

export const setup = (session: HubSpotSessionService, orgId: string): Effect.Effect<HubSpotSetupReport, Crm.CrmError> =>
  Effect.gen(function*() {
    const created: Array<string> = []
    const existing: Array<string> = []
    const byHand: Array<string> = []
    for (const { body, objectType } of PROPERTIES) {
      const name = `${objectType}.${String(body["name"])}`
      const answer = yield* Effect.either(session.call(orgId, "POST", `/crm/v3/properties/${objectType}`, body))
      if (answer._tag === "Right") {
        if (answer.right.status === 201 || answer.right.status === 200) created.push(name)
        continue
      }
      const error = answer.left
      if (error.code === "OBJECT_ALREADY_EXISTS") existing.push(name)
      else if (error.reason === "permission_denied") {
        byHand.push(`Create the ${objectType} property ${String(body["name"])} (${String(body["type"])}) in HubSpot's settings, or reconnect granting every scope Parley asks for.`)
      } else return yield* error
    }
    return { created, existing, byHand }
  })
