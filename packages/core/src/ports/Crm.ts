/**
 * Port: the CRM — the connected CRM account whose permissions every request
 * runs under, its message templates, and the records of the Leads, Contacts,
 * Vendors and Deals modules used for merging and linking. Parley's own
 * actions live in the ActionStore.
 *
 * The server's embedded CRM keeps all of this in Parley's own database; a
 * connector to a hosted CRM is another layer of this port, and may also keep
 * its own record of every live action (`recordAction`), whose id the API then
 * answers.
 */
import { Context, Data, Effect, Layer, Option, Ref } from "effect"
import type { OptOutChannel } from "../contract/OptOuts.js"
import type { CrmModule } from "../contract/Primitives.js"
import type { StorageError } from "./StorageError.js"

/**
 * Why a CRM call failed, as the HTTP layer answers it: `unavailable` (no answer, 5xx, timeout) 502
 * CRM_UNAVAILABLE; `busy` (the CRM's own rate or concurrency limit) 503 with Retry-After;
 * `oauth_required` / `identity_changed` (the connection no longer works) 403 OAUTH_REQUIRED /
 * IDENTITY_CHANGED; `permission_denied` (the CRM refused the connected user) 403 CRM_PERMISSION_DENIED;
 * `rejected` (the CRM refused this record as sent: a retry cannot succeed) 400 CRM_REJECTED naming `field`
 * and the CRM's `code`; `setup_required` (what Parley keeps in the CRM is missing) 503 SETUP_REQUIRED.
 */
export type CrmFailure =
  | "unavailable"
  | "busy"
  | "oauth_required"
  | "identity_changed"
  | "permission_denied"
  | "rejected"
  | "setup_required"

/** The CRM did not answer or refused; see CrmFailure for the answer (absent reason: unavailable). */
export class CrmError extends Data.TaggedError("CrmError")<{
  readonly operation: string
  readonly cause: unknown
  readonly reason?: CrmFailure
  readonly retryAfterSeconds?: number
  /** The CRM's own code for a refusal (Zoho: `INVALID_DATA`, `MANDATORY_NOT_FOUND`…), kept for the answer and the log. */
  readonly code?: string
  /** The field the CRM named in a refusal (Zoho: `details.api_name`). */
  readonly field?: string
}> {}

/** A new live action as the CRM records it (see `recordAction`). */
export interface CrmActionDraft {
  readonly orgId: string
  /** Stable for one creation request (organisation, API key, Idempotency-Key): a retry finds the same record. */
  readonly key: string
  readonly kind: "message" | "ai_call"
  readonly direction: "Outbound" | "Inbound"
  readonly type: string
  readonly status: string
  readonly line: string
  readonly counterpart: string
  readonly body: string
  /** An inbound message's media URLs (see Action); a CRM with no place for them shows them as it can. */
  readonly mediaUrls?: ReadonlyArray<string> | undefined
  readonly at: string
  readonly scheduledFor: string | null
  readonly botId: string | null
  readonly sentBy: string | null
  readonly record: { readonly module: CrmModule; readonly id: string } | null
}

export interface CrmPermissions {
  /** Modules whose records the account may read; linking or merging a record needs it. */
  readonly modules: ReadonlyArray<CrmModule>
  /** Which actions the account sees: every action, only those it owns, or none. */
  readonly actionsView: "all" | "own" | "none"
  /** Whether it may create and cancel actions. */
  readonly actionsWrite: boolean
  /** Whether it may read message templates. */
  readonly templates: boolean
}

export const FULL_PERMISSIONS: CrmPermissions = {
  modules: ["Leads", "Contacts", "Vendors", "Deals"],
  actionsView: "all",
  actionsWrite: true,
  templates: true
}

export interface CrmAccount {
  readonly id: string
  readonly name: string
  readonly permissions: CrmPermissions
}

export type CrmConnection =
  | { readonly state: "connected"; readonly account: CrmAccount }
  | { readonly state: "disconnected" }
  /** The account behind the stored token is no longer the one that was connected. */
  | { readonly state: "identity_changed"; readonly account: CrmAccount }

export interface TemplateRow {
  readonly orgId: string
  readonly id: string
  readonly crmId: string
  readonly recordType: string | null
  readonly name: string
  readonly body: string
}

export interface CrmRecord {
  readonly orgId: string
  readonly module: CrmModule
  readonly id: string
  readonly name: string
  readonly phone: string | null
  readonly ownerId: string | null
  /**
   * Field values by label as CRM users write them (`First Name`); a lookup or owner field by the name of
   * what it names. The sending user's fields, where the CRM merges them, are keyed `User.<label>`
   * (`User.First Name`).
   */
  readonly fields: Readonly<Record<string, string>>
  /**
   * True where the CRM's own merge fills a known but empty field with nothing (Zoho): an empty value then
   * merges as an empty string. Otherwise (the embedded CRM) an empty field is refused like an unknown one.
   */
  readonly emptyMergesAsBlank?: boolean
  /**
   * The channels the CRM record itself says its person opted out of (a CRM's own opt-out field, ticked there by
   * an administrator or by Parley): a send that links the record on one of them is refused as an opted-out
   * number's is. Absent: the CRM keeps no such field.
   */
  readonly optedOutOf?: ReadonlyArray<OptOutChannel>
}

/**
 * The order templates are listed in: names as people read them, not as bytes ("alpha" before "Zed",
 * "Émile" beside "Emile", "Step 2" before "Step 10"). The Unicode Collation Algorithm's root order
 * (CLDR's `und` locale, through ICU's Intl.Collator), numeric, at full strength so case and accents
 * only break ties ("alpha" before "Alpha"); identical names by id. Every implementation of the port
 * sorts with this one function, so both stores (and any CRM) list the same templates in the same
 * order, and the first 200 are the ones a reader expects first.
 */
const templateNameCollator = new Intl.Collator("und", { numeric: true })
export const byTemplateName = (a: TemplateRow, b: TemplateRow): number =>
  templateNameCollator.compare(a.name, b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export interface CrmService {
  readonly connection: (orgId: string) => Effect.Effect<CrmConnection, CrmError | StorageError>
  readonly setConnection: (orgId: string, connection: CrmConnection) => Effect.Effect<void, CrmError | StorageError>
  /** The organisation's first `limit` templates in `byTemplateName` order. */
  readonly listTemplates: (orgId: string, limit: number) => Effect.Effect<ReadonlyArray<TemplateRow>, CrmError | StorageError>
  readonly findTemplate: (orgId: string, id: string) => Effect.Effect<Option.Option<TemplateRow>, CrmError | StorageError>
  readonly upsertTemplate: (row: TemplateRow) => Effect.Effect<void, CrmError | StorageError>
  /** A record; `fieldLabels`, when given, are the only fields the caller needs (a template's placeholders). */
  readonly findRecord: (
    orgId: string,
    module: CrmModule,
    id: string,
    fieldLabels?: ReadonlyArray<string>
  ) => Effect.Effect<Option.Option<CrmRecord>, CrmError | StorageError>
  /**
   * The CRM's own record of a new live action, created or found again by `draft.key`: its id becomes the
   * action's public id. None when the CRM keeps no records of actions (the embedded CRM).
   */
  readonly recordAction: (draft: CrmActionDraft) => Effect.Effect<Option.Option<string>, CrmError | StorageError>
  /** The record an inbound text from `phone` is linked to, if the CRM names one (each CRM documents its rule). */
  readonly findByPhone: (orgId: string, phone: string) => Effect.Effect<Option.Option<CrmRecord>, CrmError | StorageError>
  readonly upsertRecord: (row: CrmRecord) => Effect.Effect<void, CrmError | StorageError>
  readonly listRecords: (orgId: string) => Effect.Effect<ReadonlyArray<CrmRecord>, CrmError | StorageError>
}

export class Crm extends Context.Tag("@parley/core/ports/Crm")<Crm, CrmService>() {}

export const layerMemory: Layer.Layer<Crm> = Layer.effect(
  Crm,
  Effect.gen(function*() {
    const connections = yield* Ref.make(new Map<string, CrmConnection>())
    const templates = yield* Ref.make(new Map<string, TemplateRow>())
    const records = yield* Ref.make(new Map<string, CrmRecord>())
    const recordKey = (orgId: string, module: string, id: string) => `${orgId}\u0000${module}\u0000${id}`

    return Crm.of({
      connection: (orgId) =>
        Effect.map(Ref.get(connections), (m) => m.get(orgId) ?? { state: "disconnected" as const }),
      setConnection: (orgId, connection) => Ref.update(connections, (m) => new Map(m).set(orgId, connection)),
      listTemplates: (orgId, limit) =>
        Effect.map(Ref.get(templates), (m) =>
          [...m.values()]
            .filter((t) => t.orgId === orgId)
            .sort(byTemplateName)
            .slice(0, limit)),
      findTemplate: (orgId, id) =>
        Effect.map(Ref.get(templates), (m) => Option.fromNullable(m.get(`${orgId}\u0000${id}`))),
      upsertTemplate: (row) => Ref.update(templates, (m) => new Map(m).set(`${row.orgId}\u0000${row.id}`, row)),
      findRecord: (orgId, module, id) =>
        Effect.map(Ref.get(records), (m) => Option.fromNullable(m.get(recordKey(orgId, module, id)))),
      upsertRecord: (row) => Ref.update(records, (m) => new Map(m).set(recordKey(row.orgId, row.module, row.id), row)),
      listRecords: (orgId) => Effect.map(Ref.get(records), (m) => [...m.values()].filter((r) => r.orgId === orgId)),
      recordAction: () => Effect.succeed(Option.none()),
      findByPhone: (orgId, phone) =>
        Effect.map(Ref.get(records), (m) =>
          Option.fromNullable([...m.values()].find((r) => r.orgId === orgId && r.phone === phone)))
    })
  })
)
