/**
 * The principal a request runs as: the authenticated API key, its
 * organisation as it is right now, and the CRM account requests execute as
 * (the one connected now, for every key). Provided by the Authorization
 * middleware to every handler.
 */
import { Context } from "effect"
import type { KeyMode, Scope } from "../contract/Primitives.js"
import type { CrmAccount } from "../ports/Crm.js"
import type { Organisation } from "../ports/Organisations.js"

export interface CallerInfo {
  readonly orgId: string
  readonly keyId: string
  readonly mode: KeyMode
  readonly scopes: ReadonlySet<Scope>
  /** Number sids the key is restricted to; empty means every number of the organisation. */
  readonly numberSids: ReadonlyArray<string>
  /** Bot ids the key is restricted to; empty means every bot of the organisation. */
  readonly botIds: ReadonlyArray<string>
  readonly organisation: Organisation
  readonly account: CrmAccount
}

export class Caller extends Context.Tag("@parley/core/Caller")<Caller, CallerInfo>() {}
