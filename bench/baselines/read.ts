/**
 * Read-path baseline: a raw `node:http` + `better-sqlite3` server doing, by
 * hand, the work of Parley's GET /api/v1/numbers and GET /api/v1/messages/{id}
 * on a copy of the same database:
 * - the Bearer key (keys.ts): its SHA-256 looked up by the unique index, with
 *   its organisation and CRM connection in the same statement, then revoked,
 *   expired, subscription, pilot gate, connection and seat checked;
 * - the resource: one indexed read (the organisation's numbers, narrowed to
 *   the key's; the message by id within the organisation and the key's
 *   lines), mapped to the contract's JSON field by field and serialised.
 * Nothing is cached (each request reads the database, as a plain server
 * would) and nothing is validated beyond that. The bodies are byte-identical
 * to Parley's (the orchestrator checks).
 *
 * Config (JSON in argv[2]): { dbFile }.
 */
import { createServer, type ServerResponse } from "node:http"
import Database from "better-sqlite3"
import { isRefusal, keyChecker } from "./keys.js"
import { listen } from "./listen.js"

interface Config {
  readonly dbFile: string
}

interface NumberRow {
  readonly sid: string
  readonly phone_number: string
  readonly friendly_name: string
  readonly sms: number
  readonly voice: number
  readonly whatsapp: number
  readonly voice_outbound_bot_id: string | null
}

interface ActionRow {
  readonly id: number
  readonly kind: string
  readonly type: string
  readonly direction: string
  readonly status: string
  readonly line: string
  readonly counterpart: string
  readonly from_number_sid: string | null
  readonly body: string
  readonly bot_id: string | null
  readonly read_at: string | null
  readonly at: string
  readonly scheduled_for: string | null
  readonly owner_id: string | null
  readonly owner_name: string | null
  readonly record_module: string | null
  readonly record_id: string | null
  readonly record_name: string | null
  readonly linked_records: string
  readonly sid: string | null
  readonly audio_file_id: string | null
  readonly error_message: string | null
  readonly sent_by: string | null
  readonly modified: string
}

interface LinkedRecord {
  readonly module: string
  readonly id: string
  readonly name: string | null
}

const config = JSON.parse(process.argv[2] ?? "{}") as Config
const db = new Database(config.dbFile)
db.pragma("journal_mode = WAL")
db.pragma("busy_timeout = 5000")

const checkKey = keyChecker(db)
const numbersOf = db.prepare(`SELECT sid, phone_number, friendly_name, sms, voice, whatsapp, voice_outbound_bot_id
  FROM numbers WHERE org_id = ? ORDER BY sid`)
const messageById = db.prepare("SELECT * FROM actions WHERE id = ? AND org_id = ? AND kind = 'message'")

const error = (res: ServerResponse, status: number, code: string, message: string) =>
  send(res, status, JSON.stringify({ error: { code, message } }))

const send = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const allowed = (restriction: ReadonlyArray<string>, sid: string | null) =>
  restriction.length === 0 || (sid !== null && restriction.includes(sid))

const numbersBody = (rows: ReadonlyArray<NumberRow>, restriction: ReadonlyArray<string>) =>
  JSON.stringify({
    items: rows.filter((n) => allowed(restriction, n.sid)).map((n) => ({
      sid: n.sid,
      phoneNumber: n.phone_number,
      friendlyName: n.friendly_name,
      capabilities: { sms: n.sms === 1, voice: n.voice === 1, whatsapp: n.whatsapp === 1 },
      voiceOutboundBotId: n.voice_outbound_bot_id
    }))
  })

const messageBody = (a: ActionRow, readable: ReadonlyArray<string>) => {
  const outbound = a.direction === "Outbound"
  const mayRead = (module: string) => readable.includes(module)
  const linked = JSON.parse(a.linked_records) as ReadonlyArray<LinkedRecord>
  const record = a.record_module === null || a.record_id === null || !mayRead(a.record_module)
    ? null
    : { id: a.record_id, name: a.record_name }
  const linkedName = (module: string) => mayRead(module) ? (linked.find((r) => r.module === module)?.name ?? null) : null
  return JSON.stringify({
    id: String(a.id),
    name: record?.name ?? null,
    senderName: outbound ? a.owner_name : (record?.name ?? null),
    linkedSenders: {
      Contact: linkedName("Contacts"),
      Account: linkedName("Deals"),
      Vendor: linkedName("Vendors"),
      Lead: linkedName("Leads")
    },
    from: outbound ? a.line : a.counterpart,
    to: outbound ? a.counterpart : a.line,
    direction: a.direction,
    body: a.body,
    status: a.status,
    type: a.type,
    botId: a.bot_id,
    read: a.read_at,
    at: a.at,
    scheduledFor: a.scheduled_for,
    owner: a.owner_id === null ? null : { id: a.owner_id, name: a.owner_name },
    record,
    linkedRecords: linked.map((r) => ({ module: r.module, id: r.id, name: mayRead(r.module) ? r.name : null })),
    sid: a.sid,
    audioFileId: a.audio_file_id,
    errorMessage: a.error_message,
    ...(a.sent_by === null ? {} : { sentBy: a.sent_by }),
    modified: a.modified
  })
}

const MESSAGE_PATH = /^\/api\/v1\/messages\/(\d+)$/

const server = createServer((req, res) => {
  if (req.url === "/healthz") return send(res, 200, "{\"status\":\"ok\"}")
  const key = checkKey(req.headers.authorization)
  if (isRefusal(key)) return error(res, key.status, key.code, key.message)
  const restriction = JSON.parse(key.number_sids) as ReadonlyArray<string>
  if (req.method === "GET" && req.url === "/api/v1/numbers") {
    return send(res, 200, numbersBody(numbersOf.all(key.org_id) as ReadonlyArray<NumberRow>, restriction))
  }
  const message = req.method === "GET" ? MESSAGE_PATH.exec(req.url ?? "") : null
  if (message !== null) {
    const row = messageById.get(Number(message[1]), key.org_id) as ActionRow | undefined
    if (row === undefined || !allowed(restriction, row.from_number_sid)) return error(res, 404, "NOT_FOUND", "No such message.")
    const permissions = JSON.parse(key.permissions ?? "{}") as {
      readonly modules?: ReadonlyArray<string>
      readonly actionsView?: string
    }
    if (permissions.actionsView !== "all" && row.owner_id !== key.account_id) return error(res, 404, "NOT_FOUND", "No such message.")
    return send(res, 200, messageBody(row, permissions.modules ?? []))
  }
  error(res, 404, "NOT_FOUND", "No such route.")
})
listen(server, () => db.close())
