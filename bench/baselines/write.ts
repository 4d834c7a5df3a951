/**
 * Write-path baseline: a raw `node:http` + `better-sqlite3` server doing the
 * inserts Parley's POST /api/v1/messages does — one action row (the column
 * set Parley writes, Queued and due now) and one idempotency row (stored
 * response included) in one transaction — on a copy of the same database,
 * with the same durability settings (WAL, synchronous=NORMAL), answering 202
 * with the same JSON shape. It checks the Bearer key and the Idempotency-Key
 * header, parses the body and fingerprints it, and nothing else.
 *
 * Config (JSON in argv[2]): { key, keyId, orgId, dbFile, lines: { "<sid>": "<phone>" }, ownerId, ownerName }.
 */
import { createHash } from "node:crypto"
import { createServer, type ServerResponse } from "node:http"
import Database from "better-sqlite3"
import { listen } from "./listen.js"

interface Config {
  readonly key: string
  readonly keyId: string
  readonly orgId: string
  readonly dbFile: string
  readonly lines: Readonly<Record<string, string>>
  readonly ownerId: string | null
  readonly ownerName: string | null
}

const config = JSON.parse(process.argv[2] ?? "{}") as Config
const expected = `Bearer ${config.key}`
const DAY = 24 * 60 * 60 * 1000

const db = new Database(config.dbFile)
db.pragma("journal_mode = WAL")
db.pragma("synchronous = NORMAL")
db.pragma("busy_timeout = 5000")
db.pragma("foreign_keys = ON")

const insertAction = db.prepare(`INSERT INTO actions (
  org_id, kind, type, direction, status, line, counterpart, from_number_sid, body, bot_id, mode, purpose_message,
  template_id, wa_content_sid, wa_content_variables, read_at, at, scheduled_for, due_at, owner_id, owner_name,
  record_module, record_id, record_name, linked_records, sid, audio_file_id, error_message, sent_by, modified,
  api_key_id, work_at
) VALUES (
  @org_id, 'message', 'SMS', 'Outbound', 'Queued', @line, @counterpart, @from_number_sid, @body, NULL, NULL, NULL,
  NULL, NULL, NULL, @at, @at, NULL, @due_at, @owner_id, @owner_name,
  NULL, NULL, NULL, '[]', NULL, NULL, NULL, @sent_by, @at,
  @api_key_id, @due_at
) RETURNING id`)
const insertKey = db.prepare(`INSERT INTO idempotency_keys
  (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body)
  VALUES (?, ?, ?, ?, ?, 202, ?)`)

interface NewMessage {
  readonly to: string
  readonly fromNumberSid: string
  readonly body: string
}

const accept = db.transaction((message: NewMessage, idempotencyKey: string, fingerprint: string, now: number) => {
  const at = new Date(now).toISOString()
  const row = insertAction.get({
    org_id: config.orgId,
    line: config.lines[message.fromNumberSid] ?? message.fromNumberSid,
    counterpart: message.to,
    from_number_sid: message.fromNumberSid,
    body: message.body,
    at,
    due_at: now,
    owner_id: config.ownerId,
    owner_name: config.ownerName,
    sent_by: `API key ${config.keyId}`,
    api_key_id: config.keyId
  }) as { id: number }
  const response = JSON.stringify({ id: String(row.id), status: "accepted", test: false })
  insertKey.run(config.keyId, idempotencyKey, fingerprint, now + 60_000, now + DAY, response)
  return response
})

const send = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}
const error = (res: ServerResponse, status: number, code: string, message: string) =>
  send(res, status, JSON.stringify({ error: { code, message } }))

const isMessage = (value: unknown): value is NewMessage => {
  if (typeof value !== "object" || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v["to"] === "string" && typeof v["fromNumberSid"] === "string" && typeof v["body"] === "string"
}

const server = createServer((req, res) => {
  if (req.url === "/healthz") return send(res, 200, "{\"status\":\"ok\"}")
  if (req.headers.authorization !== expected) return error(res, 401, "UNAUTHORIZED", "Missing or invalid API key.")
  if (req.method !== "POST" || req.url !== "/api/v1/messages") return error(res, 404, "NOT_FOUND", "No such route.")
  const idempotencyKey = req.headers["idempotency-key"]
  if (typeof idempotencyKey !== "string" || idempotencyKey === "") {
    return error(res, 400, "INVALID_REQUEST", "Idempotency-Key is required.")
  }
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const raw = Buffer.concat(chunks)
    let parsed: unknown
    try {
      parsed = JSON.parse(raw.toString("utf8"))
    } catch {
      return error(res, 400, "INVALID_REQUEST", "Body is not JSON.")
    }
    if (!isMessage(parsed)) return error(res, 400, "INVALID_REQUEST", "to, fromNumberSid and body are required.")
    const fingerprint = createHash("sha256").update(`POST /api/v1/messages\n`).update(raw).digest("hex")
    try {
      send(res, 202, accept(parsed, idempotencyKey, fingerprint, Date.now()))
    } catch (cause) {
      const constraint = cause instanceof Error && /UNIQUE/.test(cause.message)
      error(res, constraint ? 409 : 500, constraint ? "CONFLICT" : "INTERNAL", String(cause))
    }
  })
})
listen(server, () => db.close())
