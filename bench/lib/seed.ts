/**
 * Seeding straight into Parley's SQLite file with better-sqlite3, before the
 * server starts: batched inserts in transactions, with progress lines. Rows
 * carry the column set Parley itself writes (`fromAction` in
 * packages/server/src/store/SqlActionStore.ts), so the server reads them like its own.
 */
import { copyFileSync, existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import Database from "better-sqlite3"

export const DB_FILE = "parley.db"

/** A consistent copy of a (possibly live, WAL-mode) database into a fresh data directory. */
/** The data directory's key file (SecretBox), which a copy of its database needs beside it. */
const SECRET_KEY_FILE = "secret.key"

export const snapshot = (sourceDir: string, destinationDir: string): string => {
  mkdirSync(destinationDir, { recursive: true })
  const destination = join(destinationDir, DB_FILE)
  const source = new Database(join(sourceDir, DB_FILE), { readonly: true })
  try {
    source.prepare("VACUUM INTO ?").run(destination)
  } finally {
    source.close()
  }
  // The key the database's secrets are sealed with (SecretBox): without it a server on the copy refuses to start.
  const key = join(sourceDir, SECRET_KEY_FILE)
  if (existsSync(key)) copyFileSync(key, join(destinationDir, SECRET_KEY_FILE))
  return destination
}

export const open = (file: string): Database.Database => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.pragma("busy_timeout = 5000")
  return db
}

/** The columns of `fromAction`, in its order. */
const ACTION_COLUMNS = [
  "org_id", "kind", "type", "direction", "status", "line", "counterpart", "from_number_sid", "body", "bot_id", "mode",
  "purpose_message", "template_id", "wa_content_sid", "wa_content_variables", "read_at", "at", "scheduled_for",
  "due_at", "owner_id", "owner_name", "record_module", "record_id", "record_name", "linked_records", "sid",
  "audio_file_id", "error_message", "sent_by", "modified", "api_key_id", "work_at"
] as const
type ActionColumn = typeof ACTION_COLUMNS[number]
export type ActionRowValues = Record<ActionColumn, string | number | null>

const insertActionSql = `INSERT INTO actions (${ACTION_COLUMNS.join(", ")}) VALUES (${
  ACTION_COLUMNS.map((c) => `@${c}`).join(", ")
})`

export interface Line {
  readonly sid: string
  readonly phoneNumber: string
}

export interface OrgContext {
  readonly orgId: string
  readonly lines: ReadonlyArray<Line>
  readonly ownerId: string | null
  readonly ownerName: string | null
  readonly keyId: string
}

const batchInsert = (
  db: Database.Database,
  total: number,
  row: (i: number) => ActionRowValues,
  label: string,
  log: (line: string) => void
) => {
  const insert = db.prepare(insertActionSql)
  const BATCH = 10_000
  const insertBatch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) insert.run(row(i))
  })
  const started = Date.now()
  const every = Math.max(BATCH, Math.ceil(total / 10 / BATCH) * BATCH)
  for (let from = 0; from < total; from += BATCH) {
    const to = Math.min(total, from + BATCH)
    insertBatch(from, to)
    if (to % every === 0 || to === total) {
      const seconds = (Date.now() - started) / 1000
      log(`  ${label}: ${to.toLocaleString("en-US")} / ${total.toLocaleString("en-US")} rows (${seconds.toFixed(1)} s, ${
        Math.round(to / Math.max(seconds, 0.001)).toLocaleString("en-US")
      } rows/s)`)
    }
  }
}

const counterpartOf = (conversation: number) => `+1202${String(5_000_000 + conversation).padStart(7, "0")}`

/** The columns every seeded text shares: an SMS of the org's owner on no CRM record, without a bot or template. */
const textColumns = (org: OrgContext) => ({
  org_id: org.orgId,
  kind: "message",
  type: "SMS",
  bot_id: null,
  mode: null,
  purpose_message: null,
  template_id: null,
  wa_content_sid: null,
  wa_content_variables: null,
  owner_id: org.ownerId,
  owner_name: org.ownerName,
  record_module: null,
  record_id: null,
  record_name: null,
  linked_records: "[]",
  audio_file_id: null,
  error_message: null
})

/**
 * `messages` texts across `conversations` conversations (line × counterpart),
 * interleaved so every page mixes conversations; 1 in 4 inbound (half of
 * those unread), the rest outbound and delivered; history ending a day ago.
 */
export const seedConversations = (
  file: string,
  org: OrgContext,
  messages: number,
  conversations: number,
  log: (line: string) => void
) => {
  const db = open(file)
  try {
    // Bulk load without the secondary indexes, then rebuild them from their own DDL: same schema, faster seeding.
    const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions' AND sql IS NOT NULL")
      .all() as Array<{ name: string; sql: string }>
    for (const index of indexes) db.exec(`DROP INDEX "${index.name}"`)
    const end = Date.now() - 24 * 60 * 60 * 1000
    const start = end - messages * 1000
    const common = textColumns(org)
    batchInsert(db, messages, (i) => {
      const conversation = i % conversations
      const line = org.lines[conversation % org.lines.length] as Line
      const counterpart = counterpartOf(conversation)
      const inbound = i % 4 === 3
      const time = start + i * 1000
      const at = new Date(time).toISOString()
      return {
        ...common,
        direction: inbound ? "Inbound" : "Outbound",
        status: inbound ? "Received" : "Delivered",
        line: line.phoneNumber,
        counterpart,
        from_number_sid: inbound ? null : line.sid,
        body: inbound
          ? `Reply ${i}: yes, that works for me. See you then.`
          : `Hello from Parley (${i}): your appointment is confirmed for tomorrow at 10:00. Reply STOP to opt out.`,
        read_at: inbound && i % 8 === 3 ? null : at,
        at,
        scheduled_for: null,
        due_at: time,
        sid: `SM${String(i + 1).padStart(32, "0")}`,
        sent_by: inbound ? null : `API key ${org.keyId}`,
        modified: at,
        api_key_id: inbound ? null : org.keyId,
        work_at: null
      }
    }, "messages", log)
    const indexing = Date.now()
    for (const index of indexes) db.exec(index.sql)
    log(`  rebuilt ${indexes.length} indexes on actions (${((Date.now() - indexing) / 1000).toFixed(1)} s)`)
    db.pragma("wal_checkpoint(TRUNCATE)")
  } finally {
    db.close()
  }
}

/**
 * `count` live texts, Queued: all due at the same moment `dueAt` (epoch ms), or the i-th at `dueAt(i)`
 * (a steady stream).
 */
export const seedDueActions = (
  file: string,
  org: OrgContext,
  count: number,
  dueAt: number | ((i: number) => number),
  log: (line: string) => void
) => {
  const db = open(file)
  try {
    const dueOf = typeof dueAt === "number" ? () => dueAt : dueAt
    const line = org.lines[0] as Line
    const common = textColumns(org)
    batchInsert(db, count, (i) => {
      const due = dueOf(i)
      const created = new Date(due - 60 * 60 * 1000).toISOString()
      return {
        ...common,
        direction: "Outbound",
        status: "Queued",
        line: line.phoneNumber,
        counterpart: `+1303${String(5_000_000 + i).padStart(7, "0")}`,
        from_number_sid: line.sid,
        body: `Scheduled reminder ${i}: your appointment is tomorrow at 10:00.`,
        read_at: created,
        at: created,
        scheduled_for: new Date(due).toISOString(),
        due_at: due,
        sid: null,
        sent_by: `API key ${org.keyId}`,
        modified: created,
        api_key_id: org.keyId,
        work_at: due
      }
    }, "due actions", log)
    db.pragma("wal_checkpoint(TRUNCATE)")
  } finally {
    db.close()
  }
}

export interface DispatchProgress {
  readonly sent: number
  readonly queued: number
  readonly failed: number
}

/**
 * Reads the dispatcher's progress from the live database (WAL: readers never block the server). The
 * sends are counted often, so that count must stay cheap: a scan of 100,000 actions takes ~40 ms of a
 * core that the server under measurement shares; statuses are read only now and then.
 */
export class DispatchProbe {
  private readonly db: Database.Database
  private readonly sendCount: Database.Statement
  private readonly statusCount: Database.Statement
  private readonly sendsBefore: number

  constructor(file: string, private readonly fromId: number) {
    this.db = new Database(file, { readonly: true, fileMustExist: true })
    this.db.pragma("busy_timeout = 5000")
    this.sendCount = this.db.prepare("SELECT count(*) AS n FROM simulated_sends")
    this.statusCount = this.db.prepare(
      "SELECT sum(status = 'Queued' AND charged_at IS NULL) AS queued, sum(status = 'Failed') AS failed FROM actions WHERE id >= ?"
    )
    // The template may hold sends of its own; every send after this is one of the seeded actions.
    this.sendsBefore = this.countSends()
  }

  private countSends(): number {
    return (this.sendCount.get() as { n: number }).n
  }

  /** Sends of the seeded actions so far (the cheap check). */
  sent(): number {
    return this.countSends() - this.sendsBefore
  }

  progress(): DispatchProgress {
    const sent = this.sent()
    const { failed, queued } = this.statusCount.get(this.fromId) as { queued: number | null; failed: number | null }
    return { sent, queued: queued ?? 0, failed: failed ?? 0 }
  }

  /** Lateness (first send − due time) of every sent action of the batch, ascending, and the send times. */
  lateness(): { readonly lateness: Array<number>; readonly firstSentAt: number | null; readonly lastSentAt: number | null } {
    const rows = this.db.prepare(
      `SELECT s.first_sent_at AS sent, a.due_at AS due FROM simulated_sends s
       JOIN actions a ON a.id = CAST(s.action_id AS INTEGER) WHERE a.id >= ?`
    ).all(this.fromId) as Array<{ sent: number; due: number }>
    const lateness = rows.map((r) => r.sent - r.due).sort((a, b) => a - b)
    let first: number | null = null
    let last: number | null = null
    for (const r of rows) {
      if (first === null || r.sent < first) first = r.sent
      if (last === null || r.sent > last) last = r.sent
    }
    return { lateness, firstSentAt: first, lastSentAt: last }
  }

  close() {
    this.db.close()
  }
}

/** The next action id the table will hand out (the seeded batch starts there). */
export const nextActionId = (file: string): number => {
  const db = new Database(file, { readonly: true })
  try {
    const row = db.prepare("SELECT coalesce(max(id), 0) + 1 AS next FROM actions").get() as { next: number }
    const seq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'actions'").get() as { seq: number } | undefined
    return Math.max(row.next, (seq?.seq ?? 0) + 1)
  } finally {
    db.close()
  }
}

/** Raises the organisation's text allowance to unlimited (what `parley orgs update --sms-allowance unlimited` writes). */
export const unlimitedTexts = (file: string, orgId: string) => {
  const db = open(file)
  try {
    db.prepare("UPDATE organisations SET sms_allowance = NULL WHERE id = ?").run(orgId)
  } finally {
    db.close()
  }
}
