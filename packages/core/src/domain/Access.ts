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
import { Context, Effect, Either, Layer, Option } from "effect"
import {
  IdentityChanged,
  OAuthRequired,
  PilotPending,
  SeatInactive,
  SubscriptionInactive,
  Unauthorized
} from "../contract/Errors.js"
import type { ApiKeyRow } from "../ports/ApiKeyStore.js"
import { Crm, type CrmConnection, type CrmError } from "../ports/Crm.js"
import { type Organisation, Organisations } from "../ports/Organisations.js"
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

/** The key's organisation, if it may use the API now; otherwise why not (gone, subscription, pilot gate). */
const admitted = (found: Option.Option<Organisation>): Either.Either<Organisation, AccessError> => {
  // A key whose organisation is gone is as good as revoked.
  if (Option.isNone(found)) return Either.left(new Unauthorized({ message: "The API key is not valid." }))
  if (!found.value.subscriptionActive) {
    return Either.left(new SubscriptionInactive({ message: "The organisation's subscription is not active." }))
  }
  if (!found.value.pilotOpen) {
    return Either.left(new PilotPending({ message: "The pilot is not yet open for this organisation." }))
  }
  return Either.right(found.value)
}

/** The caller, once the organisation passed: or why its CRM connection or seat refuses. */
const callerOf = (key: ApiKeyRow, organisation: Organisation, connection: CrmConnection): Effect.Effect<CallerInfo, AccessError> => {
  if (connection.state === "disconnected") {
    return Effect.fail(
      new OAuthRequired({
        message: "No CRM account is connected. A CRM administrator must connect one in the CRM OAuth setup."
      })
    )
  }
  if (connection.state === "identity_changed") {
    return Effect.fail(
      new IdentityChanged({
        message: "The connected CRM account changed identity. Reconnect it in the CRM OAuth setup."
      })
    )
  }
  if (!organisation.seatActive) {
    return Effect.fail(new SeatInactive({ message: "The connected CRM account's seat is not enabled." }))
  }
  return Effect.succeed({
    orgId: key.orgId,
    keyId: key.id,
    mode: key.mode,
    scopes: new Set(key.scopes),
    numberSids: key.numberSids,
    botIds: key.botIds,
    organisation,
    account: connection.account
  })
}

export const layer: Layer.Layer<Access, never, Organisations | Crm> = Layer.effect(
  Access,
  Effect.gen(function*() {
    const organisations = yield* Organisations
    const crm = yield* Crm
    // Plain checks, no generator: with the key's access read together with it (every request on the SQL
    // stores) this is no step at all but its answer.
    const resolve = (key: ApiKeyRow, found: Option.Option<Organisation>, connection?: CrmConnection) => {
      const organisation = admitted(found)
      if (Either.isLeft(organisation)) return Effect.fail(organisation.left)
      return connection !== undefined
        ? callerOf(key, organisation.right, connection)
        : Effect.flatMap(crm.connection(key.orgId), (fetched) => callerOf(key, organisation.right, fetched))
    }
    return Access.of({
      resolve: (key) =>
        key.access !== undefined
          ? resolve(key, key.access.organisation, key.access.connection)
          : Effect.flatMap(organisations.get(key.orgId), (found) => resolve(key, found))
    })
  })
)
