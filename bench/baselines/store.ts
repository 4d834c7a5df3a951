/**
 * The storage side the write baselines share: their config, the database opened with Parley's settings
 * (WAL, synchronous=NORMAL, busy timeout, foreign keys), and the action row Parley writes for a message.
 */
import Database from "better-sqlite3"
import type { NewMessage } from "./messages.js"

/** JSON in argv[2] (bench/lib/writeBaseline.ts). */
export interface WriteConfig {
  readonly key: string
  readonly keyId: string
  readonly orgId: string
  readonly dbFile: string
  readonly lines: Readonly<Record<string, string>>
  readonly ownerId: string | null
  readonly ownerName: string | null
  /** After how long the simulated carrier reports a sent message delivered (PARLEY_SIM_STEP_MS). */
  readonly simStepMs?: number
}

export const readConfig = (): WriteConfig => JSON.parse(process.argv[2] ?? "{}") as WriteConfig

export const openDatabase = (file: string): Database.Database => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.pragma("busy_timeout = 5000")
  db.pragma("foreign_keys = ON")
  return db
}

/** Parley's insert of a queued outbound SMS, due now; takes `actionRow`'s parameters, returns the id. */
export const INSERT_ACTION = `INSERT INTO actions (
  org_id, kind, type, direction, status, line, counterpart, from_number_sid, body, bot_id, mode, purpose_message,
  template_id, wa_content_sid, wa_content_variables, read_at, at, scheduled_for, due_at, owner_id, owner_name,
  record_module, record_id, record_name, linked_records, sid, audio_file_id, error_message, sent_by, modified,
  api_key_id, work_at
) VALUES (
  @org_id, 'message', 'SMS', 'Outbound', 'Queued', @line, @counterpart, @from_number_sid, @body, NULL, NULL, NULL,
  NULL, NULL, NULL, @at, @at, NULL, @due_at, @owner_id, @owner_name,
  NULL, NULL, NULL, '[]', NULL, NULL, NULL, @sent_by, @at,
  @api_key_id, @due_at
) RETURNING id`

export const actionRow = (config: WriteConfig, message: NewMessage, now: number) => ({
  org_id: config.orgId,
  line: config.lines[message.fromNumberSid] ?? message.fromNumberSid,
  counterpart: message.to,
  from_number_sid: message.fromNumberSid,
  body: message.body,
  at: new Date(now).toISOString(),
  due_at: now,
  owner_id: config.ownerId,
  owner_name: config.ownerName,
  sent_by: `API key ${config.keyId}`,
  api_key_id: config.keyId
})
