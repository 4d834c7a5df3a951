/**
 * Port: Parley's action store — its queue and its records of texts and AI
 * calls (numeric string ids), as the contract reads them back. It is not the
 * CRM (see Crm: the connected account, templates, records): the server keeps
 * both in its own database, but a connector to a hosted CRM would replace the
 * CRM alone. The dispatcher claims from this store, providers' reports update
 * it, and the API reads it.
 */
import { Context, Effect, Layer, Option, Ref } from "effect"
import type { CallMode, CrmModule } from "../contract/Primitives.js"
import type { LinkedRecord, Owner } from "../contract/Resources.js"
import type { Direction, RecordStatus, RecordType } from "../contract/Statuses.js"
import type { StorageError } from "./StorageError.js"

export type ActionKind = "message" | "ai_call"

/** An action as the CRM stores it; `toActionRecord` turns it into the contract's record. */
export interface Action {
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
  /** The text alone: empty for a media-only message. */
  readonly body: string
  /** The media an inbound message carried, as the carrier's URLs in its order; empty for everything else. */
  readonly mediaUrls: ReadonlyArray<string>
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
  /**
   * The id of the CRM's own record of this action, when the connected CRM keeps one (a hosted CRM): it is
   * the id the API answers and is asked by. Absent or null: the API's id is `id`.
   */
  readonly crmId?: string | null
  /**
   * Set on Parley's own answer to a keyword (STOP, START, HELP…): the inbound message it answers (the carrier's
   * id, else `local:` + Parley's id), at most one answer each. Such a text goes to a number that has just
   * opted out, takes no allowance and is not held by the sending hours (see Consent). Absent or null otherwise.
   */
  readonly keywordReplyTo?: string | null
}

/** The id the API shows for an action: the CRM record's when there is one. */
export const publicId = (action: Pick<Action, "id" | "crmId">): string => action.crmId ?? action.id

/**
 * Whether an id the API was given can only be a CRM record's id: Parley's own ids are a counter that never
 * reaches 16 digits, hosted CRMs' record ids (Zoho's are 19 digits) always do.
 */
export const isCrmRecordId = (id: string): boolean => /^\d{16,}$/.test(id)

export type NewAction = Omit<Action, "id">

/**
 * The fields of a text that only an outbound text or an AI call fills (its bot, its purpose, its template,
 * its WhatsApp content), empty: what an inbound text and a test event carry.
 */
export const NO_SENDING_DETAILS = {
  botId: null,
  mode: null,
  purposeMessage: null,
  templateId: null,
  whatsAppContentSid: null,
  whatsAppContentVariables: null
} as const satisfies Partial<NewAction>

/** The fields of an action that no CRM record, provider, failure or key has touched yet. */
export const UNTOUCHED = {
  record: null,
  linkedRecords: [],
  sid: null,
  audioFileId: null,
  errorMessage: null,
  sentBy: null,
  apiKeyId: null
} as const satisfies Partial<NewAction>

/**
 * The fields of an action that a conversation list (GET /conversations) reads. A page reads 51 actions, and
 * reading only these lets a store fetch half the columns (with SQLite, fetching a row's values costs about as
 * much as everything else a page does).
 */
export type ConversationEntry = Pick<
  Action,
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
  /** Only these channels (the console's Activity search); absent for all. */
  readonly types?: ReadonlyArray<RecordType>
  /** Only actions with the other party's number (exact E.164); absent for all. */
  readonly counterpart?: string
  /** Only actions whose text contains this, ignoring ASCII case; absent for all. */
  readonly text?: string
  /** Only actions created through this API key; absent for all. */
  readonly apiKeyId?: string
  /** Only actions created (`at`) at or after / strictly before these UTC ISO timestamps; absent for no bound. */
  readonly createdFrom?: string
  readonly createdBefore?: string
}

/** A provider's report applied to an action (see ProviderReports); a field left undefined keeps its value. */
export interface ProviderChange {
  readonly status: RecordStatus
  /** The provider's own status value. */
  readonly providerStatus: string
  /** The provider's id for the action; recorded only when the action has none yet (a report can beat the send's answer). */
  readonly sid?: string | undefined
  readonly errorMessage?: string | null | undefined
  /** A call's transcript. */
  readonly body?: string | undefined
  /** A call's recording. */
  readonly audioFileId?: string | undefined
  /** When the host's queue should look at the action again (epoch ms); null to leave it to reports. */
  readonly workAt: number | null
  readonly modified: string
}

export type CancelOutcome =
  | { readonly _tag: "Cancelled"; readonly action: Action }
  | { readonly _tag: "NotCancellable"; readonly action: Action }
  | { readonly _tag: "NotFound" }

export interface ActionStoreService {
  /** Creates the action and assigns its numeric id. */
  readonly insertAction: (action: NewAction) => Effect.Effect<Action, StorageError>
  readonly findAction: (orgId: string, id: string) => Effect.Effect<Option.Option<Action>, StorageError>
  /**
   * The action the API calls `id` (see `publicId`): by its CRM record id, or by Parley's id when it has none —
   * or, for an inbound text, when its CRM record came after it was stored (the id it was first announced by).
   */
  readonly findByPublicId: (orgId: string, id: string) => Effect.Effect<Option.Option<Action>, StorageError>
  /** Outbound actions still Queued and not yet handed to a provider whose time has come, earliest first. */
  readonly dueActions: (now: number, limit: number) => Effect.Effect<ReadonlyArray<Action>, StorageError>
  /**
   * Actions a provider has whose next look is due (the `workAt` of their last change: a recheck, in case
   * reports were lost, or the simulator's next step), earliest first.
   */
  readonly followUps: (now: number, limit: number) => Effect.Effect<ReadonlyArray<Action>, StorageError>
  /** When the dispatcher looks at the action again (epoch ms); null: only reports move it now. */
  readonly lookAgainAt: (orgId: string, id: string, at: number | null) => Effect.Effect<void, StorageError>
  readonly queryActions: (query: ActionQuery) => Effect.Effect<ReadonlyArray<Action>, StorageError>
  /** The same actions as `queryActions`, only the fields a conversation list reads. */
  readonly queryConversationEntries: (
    query: ActionQuery
  ) => Effect.Effect<ReadonlyArray<ConversationEntry>, StorageError>
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
  ) => Effect.Effect<CancelOutcome, StorageError>
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
  ) => Effect.Effect<Option.Option<Action>, StorageError>
  /**
   * Records that the carrier's inbound message `carrierSid` is stored as action `actionId`, once per
   * organisation: None the first time; on a carrier's retry, Some(the action stored the first time).
   * Called in the transaction that stores the action, so that a crash forgets both or neither.
   */
  readonly claimInboundSid: (
    orgId: string,
    carrierSid: string,
    actionId: string
  ) => Effect.Effect<Option.Option<string>, StorageError>
  /** When the counterpart last wrote to the line on WhatsApp (opens the 24-hour session). */
  readonly lastInboundWhatsApp: (
    orgId: string,
    line: string,
    counterpart: string
  ) => Effect.Effect<Option.Option<string>, StorageError>
}

export class ActionStore extends Context.Tag("@parley/core/ports/ActionStore")<ActionStore, ActionStoreService>() {}

/** True when the action can still be cancelled at `notBefore`: Queued and scheduled later than that. */
export const isCancellable = (action: Action, notBefore: string): boolean =>
  action.status === "Queued" && action.scheduledFor !== null && Date.parse(action.scheduledFor) > Date.parse(notBefore)

/** Lower case for A–Z only: what SQL's LOWER() does on SQLite, so every store matches the same texts. */
export const asciiLower = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase())

export const matchesQuery = (action: Action, query: ActionQuery): boolean =>
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
  (query.modifiedSince === undefined || action.modified >= query.modifiedSince) &&
  (query.types === undefined || query.types.includes(action.type)) &&
  (query.counterpart === undefined || action.counterpart === query.counterpart) &&
  (query.text === undefined || asciiLower(action.body).includes(asciiLower(query.text))) &&
  (query.apiKeyId === undefined || action.apiKeyId === query.apiKeyId) &&
  (query.createdFrom === undefined || action.at >= query.createdFrom) &&
  (query.createdBefore === undefined || action.at < query.createdBefore)

/** Actions in memory, for tests and for embedding the core without a database. */
export const layerMemory: Layer.Layer<ActionStore> = Layer.effect(
  ActionStore,
  Effect.gen(function*() {
    const actions = yield* Ref.make(new Map<string, Action>())
    const nextId = yield* Ref.make(1000)
    const inboundSids = yield* Ref.make(new Map<string, string>())
    // When each action handed to a provider is looked at again (the SQL stores' work_at).
    const workAts = yield* Ref.make(new Map<string, number>())
    const setWorkAt = (id: string, at: number | null) =>
      Ref.update(workAts, (m) => {
        const next = new Map(m)
        if (at === null) next.delete(id)
        else next.set(id, at)
        return next
      })
    const queryActions = (query: ActionQuery) =>
      Effect.map(Ref.get(actions), (m) =>
        [...m.values()]
          .filter((a) => matchesQuery(a, query))
          .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1))
          .slice(0, query.limit))

    return ActionStore.of({
      insertAction: (action) =>
        Effect.gen(function*() {
          const id = String(yield* Ref.getAndUpdate(nextId, (n) => n + 1))
          const stored: Action = { ...action, id }
          yield* Ref.update(actions, (m) => new Map(m).set(id, stored))
          return stored
        }),
      findAction: (orgId, id) =>
        Effect.map(Ref.get(actions), (m) => Option.filter(Option.fromNullable(m.get(id)), (a) => a.orgId === orgId)),
      findByPublicId: (orgId, id) =>
        Effect.map(Ref.get(actions), (m) =>
          Option.fromNullable([...m.values()].find((a) =>
            a.orgId === orgId && (publicId(a) === id || (a.direction === "Inbound" && a.id === id))
          ))),
      queryActions,
      queryConversationEntries: queryActions,
      dueActions: (now, limit) =>
        Effect.map(Ref.get(actions), (m) =>
          [...m.values()]
            .filter((a) => a.direction === "Outbound" && a.status === "Queued" && a.sid === null && a.dueAt <= now)
            .sort((a, b) => a.dueAt - b.dueAt)
            .slice(0, limit)),
      followUps: (now, limit) =>
        Effect.map(Effect.zip(Ref.get(actions), Ref.get(workAts)), ([m, at]) =>
          [...at.entries()]
            .filter(([, workAt]) => workAt <= now)
            .sort((a, b) => a[1] - b[1])
            .flatMap(([id]) => {
              const action = m.get(id)
              return action === undefined || action.sid === null ? [] : [action]
            })
            .slice(0, limit)),
      lookAgainAt: (orgId, id, at) =>
        Effect.flatMap(Ref.get(actions), (m) => m.get(id)?.orgId === orgId ? setWorkAt(id, at) : Effect.void),
      cancelAction: (orgId, kind, id, notBefore, at) =>
        Ref.modify(actions, (m): [CancelOutcome, Map<string, Action>] => {
          const action = m.get(id)
          if (action === undefined || action.orgId !== orgId || action.kind !== kind) return [{ _tag: "NotFound" }, m]
          if (!isCancellable(action, notBefore)) return [{ _tag: "NotCancellable", action }, m]
          const cancelled: Action = { ...action, status: "Cancelled", modified: at }
          return [{ _tag: "Cancelled", action: cancelled }, new Map(m).set(id, cancelled)]
        }),
      applyProviderReport: (orgId, id, expected, change) =>
        Ref.modify(actions, (m): [Option.Option<Action>, Map<string, Action>] => {
          const action = m.get(id)
          if (action === undefined || action.orgId !== orgId || action.status !== expected) return [Option.none(), m]
          const changed: Action = {
            ...action,
            status: change.status,
            sid: action.sid ?? change.sid ?? null,
            errorMessage: change.errorMessage === undefined ? action.errorMessage : change.errorMessage,
            body: change.body ?? action.body,
            audioFileId: change.audioFileId ?? action.audioFileId,
            modified: change.modified
          }
          return [Option.some(changed), new Map(m).set(id, changed)]
        }).pipe(Effect.tap((applied) => Option.isSome(applied) ? setWorkAt(id, change.workAt) : Effect.void)),
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
