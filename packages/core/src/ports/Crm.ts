/**
 * Port: the CRM, Parley's system of record. It holds the actions (texts and AI
 * calls, numeric string ids), message templates, the records of the Leads,
 * Contacts, Vendors and Deals modules used for merging and linking, and the
 * connected CRM account whose permissions every request runs under.
 *
 * The server's embedded CRM keeps all of this in Parley's own database; a
 * connector to a hosted CRM would be another layer of this port.
 */
import { Context, Data, Effect, Layer, Option, Ref } from "effect"
import type { CallMode, CrmModule } from "../contract/Primitives.js"
import type { LinkedRecord, Owner } from "../contract/Resources.js"
import type { Direction, RecordStatus, RecordType } from "../contract/Statuses.js"
import type { StorageError } from "./StorageError.js"

/** The CRM did not answer or failed; the HTTP layer answers 502 CRM_UNAVAILABLE. */
export class CrmError extends Data.TaggedError("CrmError")<{ readonly operation: string; readonly cause: unknown }> {}

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
  /** Field values by label as CRM users write them (`First Name`). */
  readonly fields: Readonly<Record<string, string>>
}

export type ActionKind = "message" | "ai_call"

/** An action as the CRM stores it; `toActionRecord` turns it into the contract's record. */
export interface CrmAction {
  readonly id: string
  readonly orgId: string
  readonly kind: ActionKind
  readonly type: RecordType
  readonly direction: Direction
  readonly status: RecordStatus
  /** The organisation's line (sender for outbound, recipient for inbound). */
  readonly line: string
  /** The other party's number. */
  readonly counterpart: string
  readonly fromNumberSid: string | null
  readonly body: string
  readonly botId: string | null
  readonly mode: CallMode | null
  readonly purposeMessage: string | null
  readonly templateId: string | null
  readonly whatsAppContentSid: string | null
  readonly whatsAppContentVariables: Readonly<Record<string, string>> | null
  readonly read: string | null
  readonly at: string
  readonly scheduledFor: string | null
  /** Epoch ms at which the dispatcher may send it (scheduledFor or creation time). */
  readonly dueAt: number
  readonly owner: Owner | null
  readonly record: { readonly module: CrmModule; readonly id: string; readonly name: string } | null
  readonly linkedRecords: ReadonlyArray<LinkedRecord>
  readonly sid: string | null
  readonly audioFileId: string | null
  readonly errorMessage: string | null
  readonly sentBy: string | null
  readonly modified: string
  readonly apiKeyId: string | null
}

export type NewAction = Omit<CrmAction, "id">

/**
 * The fields of an action that a conversation list (GET /conversations) reads. A page reads 51 actions, and
 * reading only these lets a store fetch half the columns (with SQLite, fetching a row's values costs about as
 * much as everything else a page does).
 */
export type ConversationEntry = Pick<
  CrmAction,
  | "id"
  | "type"
  | "direction"
  | "status"
  | "line"
  | "counterpart"
  | "body"
  | "read"
  | "at"
  | "owner"
  | "record"
  | "linkedRecords"
  | "sentBy"
>

export interface ActionQuery {
  readonly orgId: string
  readonly kinds: ReadonlyArray<ActionKind>
  /** Only actions on these lines (the key's number restriction); null for every line. */
  readonly lines: ReadonlyArray<string> | null
  /** Only actions owned by this account ("own" visibility); null for all. */
  readonly ownerId: string | null
  /** Only one conversation. */
  readonly conversation: { readonly line: string; readonly counterpart: string } | null
  /** Keyset pagination: only actions with a smaller id (newest first). */
  readonly beforeId: string | null
  readonly limit: number
  /** Only AI calls of these bots (the key's bot restriction; texts pass); absent or null for every bot. */
  readonly botIds?: ReadonlyArray<string> | null
  /** Only actions in these statuses (GET /messages, /ai-calls); absent for all. */
  readonly statuses?: ReadonlyArray<RecordStatus>
  /** Only actions whose `modified` is at or after this UTC ISO timestamp; absent for all. */
  readonly modifiedSince?: string
}

/** A provider's report applied to an action (see ProviderReports); a field left undefined keeps its value. */
export interface ProviderChange {
  readonly status: RecordStatus
  readonly providerStatus: string
  /** Recorded only when the action has no provider id yet. */
  readonly sid?: string | undefined
  readonly errorMessage?: string | null | undefined
  readonly body?: string | undefined
  readonly audioFileId?: string | undefined
  /** When the host's queue should look at the action again (epoch ms); null to leave it to reports. */
  readonly workAt: number | null
  readonly modified: string
}

export type CancelOutcome =
  | { readonly _tag: "Cancelled"; readonly action: CrmAction }
  | { readonly _tag: "NotCancellable"; readonly action: CrmAction }
  | { readonly _tag: "NotFound" }

export interface CrmService {
  readonly connection: (orgId: string) => Effect.Effect<CrmConnection, CrmError | StorageError>
  readonly setConnection: (orgId: string, connection: CrmConnection) => Effect.Effect<void, CrmError | StorageError>
  readonly listTemplates: (orgId: string, limit: number) => Effect.Effect<ReadonlyArray<TemplateRow>, CrmError | StorageError>
  readonly findTemplate: (orgId: string, id: string) => Effect.Effect<Option.Option<TemplateRow>, CrmError | StorageError>
  readonly upsertTemplate: (row: TemplateRow) => Effect.Effect<void, CrmError | StorageError>
  readonly findRecord: (
    orgId: string,
    module: CrmModule,
    id: string
  ) => Effect.Effect<Option.Option<CrmRecord>, CrmError | StorageError>
  readonly upsertRecord: (row: CrmRecord) => Effect.Effect<void, CrmError | StorageError>
  readonly listRecords: (orgId: string) => Effect.Effect<ReadonlyArray<CrmRecord>, CrmError | StorageError>
  /** Creates the action and assigns its numeric id. */
  readonly insertAction: (action: NewAction) => Effect.Effect<CrmAction, CrmError | StorageError>
  readonly findAction: (orgId: string, id: string) => Effect.Effect<Option.Option<CrmAction>, CrmError | StorageError>
  /** Outbound actions still Queued and not yet handed to a provider whose time has come, earliest first. */
  readonly dueActions: (now: number, limit: number) => Effect.Effect<ReadonlyArray<CrmAction>, CrmError | StorageError>
  readonly queryActions: (query: ActionQuery) => Effect.Effect<ReadonlyArray<CrmAction>, CrmError | StorageError>
  /** The same actions as `queryActions`, only the fields a conversation list reads. */
  readonly queryConversationEntries: (
    query: ActionQuery
  ) => Effect.Effect<ReadonlyArray<ConversationEntry>, CrmError | StorageError>
  /**
   * Cancels a Queued action of this kind whose scheduledFor is later than
   * `notBefore`, in one atomic conditional update: the dispatcher claims rows
   * through the same condition, so exactly one of the two wins.
   */
  readonly cancelAction: (
    orgId: string,
    kind: ActionKind,
    id: string,
    notBefore: string,
    at: string
  ) => Effect.Effect<CancelOutcome, CrmError | StorageError>
  /**
   * Applies a provider's report to the action if it is still in `expected` status (one conditional
   * update; the action leaves the dispatcher's queue): the changed action, or None when its status moved
   * meanwhile.
   */
  readonly applyProviderReport: (
    orgId: string,
    id: string,
    expected: RecordStatus,
    change: ProviderChange
  ) => Effect.Effect<Option.Option<CrmAction>, CrmError | StorageError>
  /**
   * Records that the carrier's inbound message `carrierSid` is stored as action `actionId`, once per
   * organisation: None the first time; on a carrier's retry, Some(the action stored the first time).
   * Called in the transaction that stores the action, so that a crash forgets both or neither.
   */
  readonly claimInboundSid: (
    orgId: string,
    carrierSid: string,
    actionId: string
  ) => Effect.Effect<Option.Option<string>, CrmError | StorageError>
  /** When the counterpart last wrote to the line on WhatsApp (opens the 24-hour session). */
  readonly lastInboundWhatsApp: (
    orgId: string,
    line: string,
    counterpart: string
  ) => Effect.Effect<Option.Option<string>, CrmError | StorageError>
}

export class Crm extends Context.Tag("@parley/core/ports/Crm")<Crm, CrmService>() {}

/** True when the action can still be cancelled at `notBefore`: Queued and scheduled later than that. */
export const isCancellable = (action: CrmAction, notBefore: string): boolean =>
  action.status === "Queued" && action.scheduledFor !== null && Date.parse(action.scheduledFor) > Date.parse(notBefore)

export const matchesQuery = (action: CrmAction, query: ActionQuery): boolean =>
  action.orgId === query.orgId &&
  query.kinds.includes(action.kind) &&
  (query.lines === null || query.lines.includes(action.line)) &&
  (query.ownerId === null || action.owner?.id === query.ownerId) &&
  (query.conversation === null ||
    (action.line === query.conversation.line && action.counterpart === query.conversation.counterpart)) &&
  (query.beforeId === null || BigInt(action.id) < BigInt(query.beforeId)) &&
  (query.botIds === undefined || query.botIds === null || action.kind !== "ai_call" ||
    (action.botId !== null && query.botIds.includes(action.botId))) &&
  (query.statuses === undefined || query.statuses.includes(action.status)) &&
  (query.modifiedSince === undefined || action.modified >= query.modifiedSince)

export const layerMemory: Layer.Layer<Crm> = Layer.effect(
  Crm,
  Effect.gen(function*() {
    const connections = yield* Ref.make(new Map<string, CrmConnection>())
    const templates = yield* Ref.make(new Map<string, TemplateRow>())
    const records = yield* Ref.make(new Map<string, CrmRecord>())
    const actions = yield* Ref.make(new Map<string, CrmAction>())
    const nextId = yield* Ref.make(1000)
    const inboundSids = yield* Ref.make(new Map<string, string>())
    const recordKey = (orgId: string, module: string, id: string) => `${orgId}\u0000${module}\u0000${id}`
    const queryActions = (query: ActionQuery) =>
      Effect.map(Ref.get(actions), (m) =>
        [...m.values()]
          .filter((a) => matchesQuery(a, query))
          .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1))
          .slice(0, query.limit))

    return Crm.of({
      connection: (orgId) =>
        Effect.map(Ref.get(connections), (m) => m.get(orgId) ?? { state: "disconnected" as const }),
      setConnection: (orgId, connection) => Ref.update(connections, (m) => new Map(m).set(orgId, connection)),
      listTemplates: (orgId, limit) =>
        Effect.map(Ref.get(templates), (m) =>
          [...m.values()]
            .filter((t) => t.orgId === orgId)
            .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))
            .slice(0, limit)),
      findTemplate: (orgId, id) =>
        Effect.map(Ref.get(templates), (m) => Option.fromNullable(m.get(`${orgId}\u0000${id}`))),
      upsertTemplate: (row) => Ref.update(templates, (m) => new Map(m).set(`${row.orgId}\u0000${row.id}`, row)),
      findRecord: (orgId, module, id) =>
        Effect.map(Ref.get(records), (m) => Option.fromNullable(m.get(recordKey(orgId, module, id)))),
      upsertRecord: (row) => Ref.update(records, (m) => new Map(m).set(recordKey(row.orgId, row.module, row.id), row)),
      listRecords: (orgId) => Effect.map(Ref.get(records), (m) => [...m.values()].filter((r) => r.orgId === orgId)),
      insertAction: (action) =>
        Effect.gen(function*() {
          const id = String(yield* Ref.getAndUpdate(nextId, (n) => n + 1))
          const stored: CrmAction = { ...action, id }
          yield* Ref.update(actions, (m) => new Map(m).set(id, stored))
          return stored
        }),
      findAction: (orgId, id) =>
        Effect.map(Ref.get(actions), (m) => Option.filter(Option.fromNullable(m.get(id)), (a) => a.orgId === orgId)),
      queryActions,
      queryConversationEntries: queryActions,
      dueActions: (now, limit) =>
        Effect.map(Ref.get(actions), (m) =>
          [...m.values()]
            .filter((a) => a.direction === "Outbound" && a.status === "Queued" && a.sid === null && a.dueAt <= now)
            .sort((a, b) => a.dueAt - b.dueAt)
            .slice(0, limit)),
      cancelAction: (orgId, kind, id, notBefore, at) =>
        Ref.modify(actions, (m): [CancelOutcome, Map<string, CrmAction>] => {
          const action = m.get(id)
          if (action === undefined || action.orgId !== orgId || action.kind !== kind) return [{ _tag: "NotFound" }, m]
          if (!isCancellable(action, notBefore)) return [{ _tag: "NotCancellable", action }, m]
          const cancelled: CrmAction = { ...action, status: "Cancelled", modified: at }
          return [{ _tag: "Cancelled", action: cancelled }, new Map(m).set(id, cancelled)]
        }),
      applyProviderReport: (orgId, id, expected, change) =>
        Ref.modify(actions, (m): [Option.Option<CrmAction>, Map<string, CrmAction>] => {
          const action = m.get(id)
          if (action === undefined || action.orgId !== orgId || action.status !== expected) return [Option.none(), m]
          const changed: CrmAction = {
            ...action,
            status: change.status,
            sid: action.sid ?? change.sid ?? null,
            errorMessage: change.errorMessage === undefined ? action.errorMessage : change.errorMessage,
            body: change.body ?? action.body,
            audioFileId: change.audioFileId ?? action.audioFileId,
            modified: change.modified
          }
          return [Option.some(changed), new Map(m).set(id, changed)]
        }),
      claimInboundSid: (orgId, carrierSid, actionId) =>
        Ref.modify(inboundSids, (m): [Option.Option<string>, Map<string, string>] => {
          const key = `${orgId}\u0000${carrierSid}`
          const first = m.get(key)
          return first === undefined ? [Option.none(), new Map(m).set(key, actionId)] : [Option.some(first), m]
        }),
      lastInboundWhatsApp: (orgId, line, counterpart) =>
        Effect.map(Ref.get(actions), (m) => {
          let latest: string | null = null
          for (const a of m.values()) {
            if (
              a.orgId === orgId && a.type === "WhatsApp" && a.direction === "Inbound" && a.line === line &&
              a.counterpart === counterpart && (latest === null || a.at > latest)
            ) latest = a.at
          }
          return Option.fromNullable(latest)
        })
    })
  })
)
