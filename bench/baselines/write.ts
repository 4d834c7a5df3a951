/**
 * Write-path baseline: a raw `node:http` + `better-sqlite3` server doing the
 * inserts Parley's POST /api/v1/messages does — one action row (the column
 * set Parley writes, Queued and due now) and one idempotency row (stored
 * response included) in one transaction — on a copy of the same database,
 * with the same durability settings (WAL, synchronous=NORMAL), answering 202
 * with the same JSON shape. It compares the Bearer key with the one it was
 * given, checks the Idempotency-Key header, parses the body and fingerprints it
 * (messages.ts), and nothing else.
 * Kept as a reference row: the inserts alone, no event and no dispatch.
 *
 * Config (JSON in argv[2]): { key, keyId, orgId, dbFile, lines: { "<sid>": "<phone>" }, ownerId, ownerName }.
 */
import { listen } from "./listen.js"
import type { Refusal } from "./keys.js"
import { error, messagesServer, type NewMessage, oneKey, send } from "./messages.js"
import { actionRow, INSERT_ACTION, openDatabase, readConfig } from "./store.js"

const config = readConfig()
const DAY = 24 * 60 * 60 * 1000

const db = openDatabase(config.dbFile)

const insertAction = db.prepare(INSERT_ACTION)
const insertKey = db.prepare(`INSERT INTO idempotency_keys
  (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body)
  VALUES (?, ?, ?, ?, ?, 202, ?)`)

const accept = db.transaction((message: NewMessage, idempotencyKey: string, fingerprint: string, now: number) => {
  const row = insertAction.get(actionRow(config, message, now)) as { id: number }
  const response = JSON.stringify({ id: String(row.id), status: "accepted", test: false })
  insertKey.run(config.keyId, idempotencyKey, fingerprint, now + 60_000, now + DAY, response)
  return response
})

const authenticate = oneKey(config.key)
const refused = (checked: true | Refusal): checked is Refusal => checked !== true
const server = messagesServer(config.keyId, authenticate, refused, (_caller, message, idempotencyKey, fingerprint, res) => {
  try {
    send(res, 202, accept(message, idempotencyKey, fingerprint, Date.now()))
  } catch (cause) {
    const constraint = cause instanceof Error && /UNIQUE/.test(cause.message)
    error(res, constraint ? 409 : 500, constraint ? "CONFLICT" : "INTERNAL", String(cause))
  }
})
listen(server, () => db.close())
