/**
 * Organisation access: whether an authenticated key's organisation may use
 * the API right now, and as which CRM account. Checked on every request, so a
 * change of subscription, seat, pilot gate or CRM connection applies at once.
 *
 * Order: subscription (403) → pilot gate (503) → CRM connection (403
 * OAUTH_REQUIRED / IDENTITY_CHANGED) → seat of the connected account (403).
 *
 * The organisation and connection come with the key when its store read them
 * together (see ApiKeyRow.access); otherwise they are asked of their ports.
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  IdentityChanged,
  OAuthRequired,
  PilotPending,
  SeatInactive,
  SubscriptionInactive,
  Unauthorized
} from "../contract/Errors.js"
import type { ApiKeyRow } from "../ports/ApiKeyStore.js"
import { Crm, type CrmError } from "../ports/Crm.js"
import { Organisations } from "../ports/Organisations.js"
import type { StorageError } from "../ports/StorageError.js"
import type { CallerInfo } from "./Caller.js"

export type AccessError =
  | Unauthorized
  | SubscriptionInactive
  | PilotPending
  | OAuthRequired
  | IdentityChanged
  | SeatInactive

export interface AccessService {
  readonly resolve: (key: ApiKeyRow) => Effect.Effect<CallerInfo, AccessError | CrmError | StorageError>
}

export class Access extends Context.Tag("@parley/core/Access")<Access, AccessService>() {}

export const layer: Layer.Layer<Access, never, Organisations | Crm> = Layer.effect(
  Access,
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    return Access.of({
      resolve: Effect.fnUntraced(function*(key) {
        const found = key.access === undefined ? yield* organisations.get(key.orgId) : key.access.organisation
        // A key whose organisation is gone is as good as revoked.
        if (Option.isNone(found)) return yield* new Unauthorized({ message: "The API key is not valid." })
        const organisation = found.value
        if (!organisation.subscriptionActive) {
          return yield* new SubscriptionInactive({ message: "The organisation's subscription is not active." })
        }
        if (!organisation.pilotOpen) {
          return yield* new PilotPending({ message: "The pilot is not yet open for this organisation." })
        }
        const connection = key.access === undefined ? yield* crm.connection(key.orgId) : key.access.connection
        if (connection.state === "disconnected") {
          return yield* new OAuthRequired({
            message: "No CRM account is connected. A CRM administrator must connect one in the CRM OAuth setup."
          })
        }
        if (connection.state === "identity_changed") {
          return yield* new IdentityChanged({
            message: "The connected CRM account changed identity. Reconnect it in the CRM OAuth setup."
          })
        }
        if (!organisation.seatActive) {
          return yield* new SeatInactive({ message: "The connected CRM account's seat is not enabled." })
        }
        return {
          orgId: key.orgId,
          keyId: key.id,
          mode: key.mode,
          scopes: new Set(key.scopes),
          numberSids: key.numberSids,
          botIds: key.botIds,
          organisation,
          account: connection.account
        }
      })
    })
  })
)
