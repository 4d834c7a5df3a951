/**
 * Parley's action store in SQL: the queue and records of texts and AI calls,
 * in the same database as everything else. Actions get their numeric ids
 * from the auto-increment key, so "newest first" is "highest id first" and
 * pages are keyset scans. The `actions` row is defined here once (schema,
 * columns, mappers); the dispatcher's claim and the fast reader use it.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { ActionStore, CallMode, CrmModule, Direction, LinkedRecord, RecordStatus, RecordType } from "@parley/core/internal"
import { Effect, Layer, Option, Schema } from "effect"
import { type ActionColumn, readActionValues, valuesToObjects } from "./ActionRowReader.js"
import { CreationWrites } from "./CreationWrites.js"
import * as TraceLinks from "../observability/TraceLinks.js"
import { DirectReads } from "./DirectReads.js"
import { DbInt, DbJson, NullableString, storage, StringArrayJson } from "./rows.js"
import * as StatusChanges from "./StatusChanges.js"

export const ActionRow = Schema.Struct({
  id: Schema.Union(Schema.Number, Schema.String),
  org_id: Schema.String,
  kind: Schema.Literal("message", "ai_call"),
  type: RecordType,
  direction: Direction,
  status: RecordStatus,
  line: Schema.String,
  counterpart: Schema.String,
  from_number_sid: NullableString,
  body: Schema.String,
  media_urls: StringArrayJson,
  bot_id: NullableString,
  mode: Schema.NullOr(CallMode),
  purpose_message: NullableString,
  template_id: NullableString,
  wa_content_sid: NullableString,
  wa_content_variables: Schema.NullOr(DbJson(Schema.Record({ key: Schema.String, value: Schema.String }))),
  read_at: NullableString,
  at: Schema.String,
  scheduled_for: NullableString,
  due_at: DbInt,
  owner_id: NullableString,
  owner_name: NullableString,
  record_module: Schema.NullOr(CrmModule),
  record_id: NullableString,
  record_name: NullableString,
  linked_records: DbJson(Schema.Array(LinkedRecord)),
  sid: NullableString,
  audio_file_id: NullableString,
  error_message: NullableString,
  sent_by: NullableString,
  modified: Schema.String,
  api_key_id: NullableString,
  crm_id: NullableString,
  keyword_reply_to: NullableString
})

type ActionRowType = typeof ActionRow.Type

const ownerOf = (r: Pick<ActionRowType, "owner_id" | "owner_name">): ActionStore.Action["owner"] =>
  r.owner_id === null ? null : { id: r.owner_id, name: r.owner_name ?? "" }

const recordOf = (r: Pick<ActionRowType, "record_module" | "record_id" | "record_name">): ActionStore.Action["record"] =>
  r.record_module === null || r.record_id === null
    ? null
    : { module: r.record_module, id: r.record_id, name: r.record_name ?? "" }

export const toAction = (r: ActionRowType): ActionStore.Action => ({
  id: String(r.id),
  orgId: r.org_id,
  kind: r.kind,
  type: r.type,
  direction: r.direction,
  status: r.status,
  line: r.line,
  counterpart: r.counterpart,
  fromNumberSid: r.from_number_sid,
  body: r.body,
  mediaUrls: r.media_urls,
  botId: r.bot_id,
  mode: r.mode,
  purposeMessage: r.purpose_message,
  templateId: r.template_id,
  whatsAppContentSid: r.wa_content_sid,
  whatsAppContentVariables: r.wa_content_variables,
  read: r.read_at,
  at: r.at,
  scheduledFor: r.scheduled_for,
  dueAt: r.due_at,
  owner: ownerOf(r),
  record: recordOf(r),
  linkedRecords: r.linked_records,
  sid: r.sid,
  audioFileId: r.audio_file_id,
  errorMessage: r.error_message,
  sentBy: r.sent_by,
  modified: r.modified,
  apiKeyId: r.api_key_id,
  crmId: r.crm_id,
  // Only a keyword's answer has one (the field is optional on every other action, as the memory store keeps it).
  ...(r.keyword_reply_to === null ? {} : { keywordReplyTo: r.keyword_reply_to })
})

export const fromAction = (a: ActionStore.NewAction) => ({
  org_id: a.orgId,
  kind: a.kind,
  type: a.type,
  direction: a.direction,
  status: a.status,
  line: a.line,
  counterpart: a.counterpart,
  from_number_sid: a.fromNumberSid,
  body: a.body,
  media_urls: JSON.stringify(a.mediaUrls),
  bot_id: a.botId,
  mode: a.mode,
  purpose_message: a.purposeMessage,
  template_id: a.templateId,
  wa_content_sid: a.whatsAppContentSid,
  wa_content_variables: a.whatsAppContentVariables === null ? null : JSON.stringify(a.whatsAppContentVariables),
  read_at: a.read,
  at: a.at,
  scheduled_for: a.scheduledFor,
  due_at: a.dueAt,
  owner_id: a.owner?.id ?? null,
  owner_name: a.owner?.name ?? null,
  record_module: a.record?.module ?? null,
  record_id: a.record?.id ?? null,
  record_name: a.record?.name ?? null,
  linked_records: JSON.stringify(a.linkedRecords),
  sid: a.sid,
  audio_file_id: a.audioFileId,
  error_message: a.errorMessage,
  sent_by: a.sentBy,
  modified: a.modified,
  api_key_id: a.apiKeyId,
  crm_id: a.crmId ?? null,
  keyword_reply_to: a.keywordReplyTo ?? null,
  // A live Queued action is work for the dispatcher from its due time on.
  work_at: a.status === "Queued" ? a.dueAt : null
})

const decodeActions = Schema.decodeUnknown(Schema.Array(ActionRow))

/** A key restricted to more numbers than this reads the organisation's index and filters on the line. */
const MAX_MERGED_LINES = 16

/** Every column of `ActionRow`, in its order: what action reads select (named, so the order is known). */
const ACTION_COLUMNS = Object.keys(ActionRow.fields) as ReadonlyArray<ActionColumn>

/** The columns a conversation list reads (`ActionStore.ConversationEntry`). */
const ENTRY_COLUMNS = [
  "id",
  "type",
  "direction",
  "status",
  "line",
  "counterpart",
  "body",
  "read_at",
  "at",
  "owner_id",
  "owner_name",
  "record_module",
  "record_id",
  "record_name",
  "linked_records",
  "sent_by"
] as const satisfies ReadonlyArray<ActionColumn>

const decodeEntries = Schema.decodeUnknown(Schema.Array(ActionRow.pick(...ENTRY_COLUMNS)))

const toEntry = (r: Pick<ActionRowType, typeof ENTRY_COLUMNS[number]>): ActionStore.ConversationEntry => ({
  id: String(r.id),
  type: r.type,
  direction: r.direction,
  status: r.status,
  line: r.line,
  counterpart: r.counterpart,
  body: r.body,
  read: r.read_at,
  at: r.at,
  owner: ownerOf(r),
  record: recordOf(r),
  linkedRecords: r.linked_records,
  sentBy: r.sent_by
})

/** Action rows fetched as values: the fast reader, or the schema when the reader does not recognise a row. */
const readActions = (rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
  const read = readActionValues(ACTION_COLUMNS, rows)
  return read === undefined ? decodeActions(valuesToObjects(ACTION_COLUMNS, rows)) : Effect.succeed(read)
}
const readEntries = (rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
  const read = readActionValues(ENTRY_COLUMNS, rows)
  return read === undefined ? decodeEntries(valuesToObjects(ENTRY_COLUMNS, rows)) : Effect.succeed(read)
}

type InsertedRow = ReturnType<typeof fromAction>

/** The columns an insert writes: every key of `fromAction`'s row (the compiler names any missing or extra). */
const INSERTED: { readonly [K in keyof InsertedRow]: true } = {
  org_id: true, kind: true, type: true, direction: true, status: true, line: true, counterpart: true,
  from_number_sid: true, body: true, media_urls: true, bot_id: true, mode: true, purpose_message: true, template_id: true,
  wa_content_sid: true, wa_content_variables: true, read_at: true, at: true, scheduled_for: true, due_at: true,
  owner_id: true, owner_name: true, record_module: true, record_id: true, record_name: true, linked_records: true,
  sid: true, audio_file_id: true, error_message: true, sent_by: true, modified: true, api_key_id: true, crm_id: true, keyword_reply_to: true,
  work_at: true
}
export const INSERTED_COLUMNS = Object.keys(INSERTED)

export const layer = Layer.effect(
  ActionStore.ActionStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const writes = yield* CreationWrites
    const actionColumns = sql.literal(ACTION_COLUMNS.join(", "))
    const entryColumns = sql.literal(ENTRY_COLUMNS.join(", "))
    const direct = yield* DirectReads
    const links = yield* TraceLinks.make
    const statusChanges = yield* StatusChanges.make
    // Every accepted creation inserts one action, the store adapter's fastest way.
    const insert = (a: ActionStore.NewAction) =>
      storage("crm.insertAction")(Effect.map(writes.insertAction(fromAction(a)), (id) => ({ ...a, crmId: a.crmId ?? null, id })))
    const actionById = `SELECT ${ACTION_COLUMNS.join(", ")} FROM actions WHERE org_id = ? AND id = ?`
    const actionByCrmId = `SELECT ${ACTION_COLUMNS.join(", ")} FROM actions WHERE org_id = ? AND crm_id = ?`
    const action = ({ id, orgId }: { readonly orgId: string; readonly id: string }) =>
      Effect.map(
        Effect.flatMap(direct.values(actionById, [orgId, id]), readActions),
        (rows) => Option.fromNullable(rows[0])
      )
    /**
     * On SQLite the index of each page is named: SQLite keeps no statistics, so among indexes matching as
     * many equalities it picks one arbitrarily (a conversation's page took the line index and read the whole
     * line), and a page fails rather than silently scans if its index is ever dropped. Postgres chooses from
     * its statistics.
     */
    const indexedBy = (index: string) =>
      sql.onDialectOrElse({ sqlite: () => sql.literal(`INDEXED BY ${index}`), orElse: () => sql.literal("") })
    /**
     * One page of actions, newest first, as keyset range scans of indexes ending with id, so a deep page
     * costs what the first one does and no page reads rows it then discards (a key restricted to a quiet
     * number used to read the organisation's whole history to fill a page):
     * - one conversation: actions_by_conversation (org, line, counterpart, id);
     * - a key restricted to numbers: actions_by_line (org, kind, line, id), one range per line merged by id
     *   (with an IN list the database reads every row of those lines, then sorts);
     * - an account that sees only its own actions: actions_by_owner (org, kind, owner, id);
     * - otherwise actions_by_org_kind (org, kind, id).
     * With both restrictions the line ranges filter on the owner.
     */
    /** A LIKE pattern for text containing `text` (ASCII case folded as LOWER() folds it), wildcards escaped with `!`. */
    const likeContaining = (text: string) => `%${ActionStore.asciiLower(text).replace(/[!%_]/g, (c) => `!${c}`)}%`
    const page = (q: ActionStore.ActionQuery, columns: Statement.Fragment) => {
      const common = [
        sql`org_id = ${q.orgId}`,
        sql.in("kind", q.kinds),
        ...(q.ownerId === null ? [] : [sql`owner_id = ${q.ownerId}`]),
        ...(q.beforeId === null ? [] : [sql`id < ${Number(q.beforeId)}`]),
        // The list filters of GET /messages and /ai-calls: checked on the rows of the chosen range.
        ...(q.botIds === undefined || q.botIds === null
          ? []
          : [sql`(kind <> 'ai_call' OR ${q.botIds.length === 0 ? sql`1 = 0` : sql.in("bot_id", q.botIds)})`]),
        ...(q.statuses === undefined ? [] : [sql.in("status", q.statuses)]),
        ...(q.modifiedSince === undefined ? [] : [sql`modified >= ${q.modifiedSince}`]),
        // The console's Activity search: checked on the rows of the chosen range, as the list filters.
        ...(q.types === undefined ? [] : [sql.in("type", q.types)]),
        ...(q.counterpart === undefined ? [] : [sql`counterpart = ${q.counterpart}`]),
        ...(q.text === undefined ? [] : [sql`LOWER(body) LIKE ${likeContaining(q.text)} ESCAPE '!'`]),
        ...(q.apiKeyId === undefined ? [] : [sql`api_key_id = ${q.apiKeyId}`]),
        ...(q.createdFrom === undefined ? [] : [sql`at >= ${q.createdFrom}`]),
        ...(q.createdBefore === undefined ? [] : [sql`at < ${q.createdBefore}`])
      ]
      const range = (index: string, conditions: ReadonlyArray<Statement.Fragment>) =>
        sql`SELECT ${columns} FROM actions ${indexedBy(index)} WHERE ${
          sql.and([...common, ...conditions])
        } ORDER BY id DESC LIMIT ${q.limit}`
      const lines = q.lines
      if (q.conversation !== null) {
        return range("actions_by_conversation", [
          sql`line = ${q.conversation.line}`,
          sql`counterpart = ${q.conversation.counterpart}`,
          ...(lines === null ? [] : [lines.length === 0 ? sql`1 = 0` : sql.in("line", lines)])
        ])
      }
      if (lines !== null && lines.length > 0 && lines.length <= MAX_MERGED_LINES) {
        const [only] = lines
        if (lines.length === 1 && only !== undefined) return range("actions_by_line", [sql`line = ${only}`])
        const ranges = lines.map((line, i) =>
          sql`SELECT * FROM (${range("actions_by_line", [sql`line = ${line}`])}) AS ${sql.literal(`line${i}`)}`
        )
        return sql`SELECT * FROM (${sql.join(" UNION ALL ", false)(ranges)}) AS merged ORDER BY id DESC LIMIT ${q.limit}`
      }
      const index = q.ownerId === null ? "actions_by_org_kind" : "actions_by_owner"
      return range(index, lines === null ? [] : [lines.length === 0 ? sql`1 = 0` : sql.in("line", lines)])
    }
    const lastInbound = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, line: Schema.String, counterpart: Schema.String }),
      Result: Schema.Struct({ at: Schema.String }),
      execute: ({ counterpart, line, orgId }) =>
        sql`SELECT at FROM actions WHERE org_id = ${orgId} AND line = ${line} AND counterpart = ${counterpart}
            AND type = 'WhatsApp' AND direction = 'Inbound' ORDER BY id DESC LIMIT 1`
    })

    return ActionStore.ActionStore.of({
      // The creating request's span is kept with the action while traces are exported (TraceLinks).
      insertAction: (a) => Effect.tap(insert(a), (stored) => links.recordAction(stored.id)),
      findAction: (orgId, id) => storage("crm.findAction")(Effect.map(action({ orgId, id }), Option.map(toAction))),
      findByPublicId: (orgId, id) => {
        const byCrmId = Effect.map(
          Effect.flatMap(direct.values(actionByCrmId, [orgId, id]), readActions),
          (rows) => Option.map(Option.fromNullable(rows[0]), toAction)
        )
        return storage("crm.findByPublicId")(
          ActionStore.isCrmRecordId(id)
            ? byCrmId
            // A short id is Parley's own, which the API shows only for actions without a CRM record — and which an
            // inbound text stored before its CRM record (a CRM's inbound-records outbox) was announced by. Failing
            // that, it is a hosted CRM's shorter record id (some CRMs' ids have 11 or 12 digits, far past Parley's counter).
            : Effect.flatMap(action({ orgId, id }), (found) => {
              const own = Option.filter(Option.map(found, toAction), (a) => a.crmId === null || a.direction === "Inbound")
              return Option.isSome(own) ? Effect.succeed(own) : byCrmId
            })
        )
      },
      // The server dispatches with its own batched, leased claim (dispatch/Dispatcher.ts); this answers the port
      // for hosts that embed the core's Dispatch over this store.
      dueActions: (now, limit) =>
        storage("crm.dueActions")(Effect.flatMap(
          sql`SELECT * FROM actions WHERE status = 'Queued' AND direction = 'Outbound' AND charged_at IS NULL
                AND due_at <= ${now} ORDER BY due_at LIMIT ${limit}`,
          (rows) => Effect.map(decodeActions(rows), (decoded) => decoded.map(toAction))
        )),
      // As dueActions: for embedded hosts; the server's dispatcher claims these rows itself (phase "advance").
      followUps: (now, limit) =>
        storage("crm.followUps")(Effect.flatMap(
          sql`SELECT * FROM actions WHERE work_at <= ${now} AND sid IS NOT NULL AND direction = 'Outbound'
                ORDER BY work_at LIMIT ${limit}`,
          (rows) => Effect.map(decodeActions(rows), (decoded) => decoded.map(toAction))
        )),
      lookAgainAt: (orgId, id, at) =>
        storage("crm.lookAgainAt")(
          Effect.asVoid(sql`UPDATE actions SET work_at = ${at} WHERE org_id = ${orgId} AND id = ${Number(id)}`)
        ),
      queryActions: (q) =>
        storage("crm.queryActions")(
          Effect.map(Effect.flatMap(direct.statement(page(q, actionColumns)), readActions), (rows) => rows.map(toAction))
        ),
      queryConversationEntries: (q) =>
        storage("crm.queryConversationEntries")(
          Effect.map(Effect.flatMap(direct.statement(page(q, entryColumns)), readEntries), (rows) => rows.map(toEntry))
        ),
      cancelAction: (orgId, kind, id, notBefore, at) =>
        storage("crm.cancelAction")(Effect.gen(function*() {
          // The dispatcher commits to a send with the mirror condition (status Queued, charged_at NULL):
          // whichever update lands first wins the row, and the other finds nothing to change.
          const updated = yield* sql`UPDATE actions SET status = 'Cancelled', modified = ${at}, work_at = NULL
            WHERE org_id = ${orgId} AND id = ${Number(id)} AND kind = ${kind}
              AND status = 'Queued' AND charged_at IS NULL
              AND scheduled_for IS NOT NULL AND due_at > ${Date.parse(notBefore)}
            RETURNING *`
          const [row] = yield* decodeActions(updated)
          if (row !== undefined) return { _tag: "Cancelled" as const, action: toAction(row) }
          const current = yield* action({ orgId, id })
          if (Option.isNone(current) || current.value.kind !== kind) return { _tag: "NotFound" as const }
          return { _tag: "NotCancellable" as const, action: toAction(current.value) }
        })),
      applyProviderReport: (orgId, id, expected, change) =>
        storage("crm.applyProviderReport")(Effect.map(
          // The provider now drives the action: the dispatcher only looks again at work_at (a recheck, in case
          // later reports are lost), and a lease it still holds no longer matters (its own update expects the
          // status it read).
          statusChanges.write([{ ...change, orgId, id, expected }]),
          (changed) => Option.fromNullable(changed[0])
        )),
      claimInboundSid: (orgId, carrierSid, actionId) =>
        storage("crm.claimInboundSid")(Effect.gen(function*() {
          // On Postgres a concurrent retry's insert waits for the first transaction, then finds its row.
          const inserted = yield* sql`INSERT INTO inbound_receipts ${
            sql.insert({ org_id: orgId, carrier_sid: carrierSid, action_id: actionId })
          } ON CONFLICT (org_id, carrier_sid) DO NOTHING RETURNING action_id`
          if (inserted.length > 0) return Option.none()
          const rows = yield* sql`SELECT action_id FROM inbound_receipts
            WHERE org_id = ${orgId} AND carrier_sid = ${carrierSid}`
          const [first] = yield* Schema.decodeUnknown(Schema.Array(Schema.Struct({ action_id: Schema.String })))(rows)
          return Option.fromNullable(first?.action_id)
        })),
      lastInboundWhatsApp: (orgId, line, counterpart) =>
        storage("crm.lastInboundWhatsApp")(
          Effect.map(lastInbound({ orgId, line, counterpart }), Option.map((r) => r.at))
        )
    })
  })
)
