/**
 * Write-path baseline doing the same work as Parley, by hand: a raw `node:http` + `better-sqlite3`
 * server that runs, for each POST /api/v1/messages, the statements Parley runs on the embedded store,
 * on a copy of the same database (same schema, indexes and triggers), and a dispatch loop that takes
 * each accepted message through the same steps Parley's dispatcher does with the simulated carrier:
 *
 * - accept: the API key checked against the store, nothing cached (keys.ts, as the read baseline);
 *   the idempotency lookup; then in one transaction the sending number checked (the organisation's,
 *   allowed to the key, able to text), the action row, its `message.queued` event (the same payload),
 *   its webhook deliveries and the completed idempotency record; 202 with the same body.
 * - dispatch (a loop paced as Parley's: a full batch at once, otherwise a pause until the next action
 *   is due, 10–50 ms): lease a batch of due actions (500 at most), charge it (status Sending, the units counted in the
 *   organisation's usage of the month) in one transaction, read the
 *   provider account and earlier submissions, record the batch's sends with the simulated carrier (one
 *   statement), then mark the batch Sent with its `message.sent` events in one transaction (one
 *   statement each for the status changes, the events and their deliveries); `simStepMs` later, the same for
 *   Delivered (the simulated carrier's status report; the benchmark sets it past the measurement, as
 *   for Parley).
 *
 * What it leaves out is what a hand-written server would not have: no schema, no routing table, no
 * error shape beyond one line, no logging, no rate limit, no cache. Its rate is the ceiling the write
 * row's ratio is measured against.
 *
 * Config (JSON in argv[2]): { key, keyId, orgId, dbFile, lines: { "<sid>": "<phone>" }, ownerId, ownerName, simStepMs }.
 */
import { randomBytes } from "node:crypto"
import { listen } from "./listen.js"
import { isRefusal, keyChecker, type KeyRow, type Refusal } from "./keys.js"
import { error, messagesServer, type NewMessage, send } from "./messages.js"
import { actionRow, INSERT_ACTION, openDatabase, readConfig } from "./store.js"

const config = readConfig()
const DAY = 24 * 60 * 60 * 1000
const LOCK_MS = 60_000
const BATCH = 500
const LEASE_MS = 30_000
const worker = `worker_${randomBytes(16).toString("base64url")}`

const db = openDatabase(config.dbFile)

const LAPSED = "idempotency_keys.expires_at <= ? OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ?)"
const findKey = db.prepare(`SELECT fingerprint, status, body FROM idempotency_keys
  WHERE key_id = ? AND idempotency_key = ? AND NOT (${LAPSED})`)
const insertKey = db.prepare(`INSERT INTO idempotency_keys
    (key_id, idempotency_key, fingerprint, locked_until, expires_at, status, body) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
    locked_until = excluded.locked_until, expires_at = excluded.expires_at, status = excluded.status, body = excluded.body
  WHERE ${LAPSED}`)
const ACTION_COLUMNS = `id, org_id, kind, type, direction, status, line, counterpart, from_number_sid, body, bot_id, mode,
  purpose_message, template_id, wa_content_sid, wa_content_variables, read_at, at, scheduled_for, due_at, owner_id,
  owner_name, record_module, record_id, record_name, linked_records, sid, audio_file_id, error_message, sent_by,
  modified, api_key_id, charged_at, provider_status`
const insertAction = db.prepare(INSERT_ACTION)
const insertEvent = db.prepare("INSERT INTO events (id, org_id, type, timestamp, payload) VALUES (?, ?, ?, ?, ?)")
const insertDeliveries = db.prepare(`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
  SELECT ?, id, 0, ?, 'pending', ? FROM webhooks WHERE org_id = ? AND disabled_at IS NULL
    AND id IN (SELECT webhook_id FROM webhook_event_types WHERE type IN ('*', ?))`)

const claim = db.prepare(`UPDATE actions SET lease_owner = ?, lease_until = ? WHERE id IN (
    SELECT id FROM actions WHERE work_at IS NOT NULL AND work_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
    ORDER BY work_at LIMIT ${BATCH}
  ) RETURNING ${ACTION_COLUMNS}`)
const organisation = db.prepare("SELECT * FROM organisations WHERE id = ?")
const charge = (count: number) =>
  db.prepare(`UPDATE actions SET charged_at = ?, status = CASE WHEN kind = 'message' THEN 'Sending' ELSE 'Queued' END
    WHERE id IN (${placeholders(count)}) AND lease_owner = ? AND status = 'Queued' AND charged_at IS NULL RETURNING id`)
const allowance = db.prepare("SELECT sms_allowance, call_allowance, timezone FROM organisations WHERE id = ?")
const usage = db.prepare("SELECT sms_used, call_used FROM allowance_usage WHERE org_id = ? AND period = ?")
const spend = db.prepare(`INSERT INTO allowance_usage (org_id, period, sms_used, call_used) VALUES (?, ?, ?, 0)
  ON CONFLICT (org_id, period) DO UPDATE SET sms_used = allowance_usage.sms_used + excluded.sms_used`)
const months = new Map<string, Intl.DateTimeFormat>()
const monthOf = (now: number, timeZone: string): string => {
  const format = months.get(timeZone) ?? new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit" })
  months.set(timeZone, format)
  const parts = format.formatToParts(now)
  return `${parts.find((p) => p.type === "year")?.value}-${parts.find((p) => p.type === "month")?.value}`
}
const providerAccount = db.prepare("SELECT * FROM provider_accounts WHERE org_id = ? AND kind = 'twilio'")
const submissions = (count: number) =>
  db.prepare(`SELECT action_id, attempts, first_attempt_at, last_outcome FROM provider_submissions
    WHERE action_id IN (${placeholders(count)})`)
const simulatedSends = (count: number) =>
  db.prepare(`INSERT INTO simulated_sends
      (action_id, kind, sid, recipient, status, provider_status, error_message, first_sent_at, attempts)
    VALUES ${Array.from({ length: count }, () => "(?, 'message', ?, ?, 'Sent', 'sent', NULL, ?, 1)").join(", ")}
    ON CONFLICT (action_id) DO UPDATE SET attempts = simulated_sends.attempts + 1
    RETURNING action_id, sid, status, provider_status, error_message`)
const insertEvents = (count: number) =>
  db.prepare(`INSERT INTO events (id, org_id, type, timestamp, payload)
    VALUES ${Array.from({ length: count }, () => "(?, ?, ?, ?, ?)").join(", ")}`)
const applyChange = (count: number) =>
  db.prepare(`WITH changes (action_id, expected_status, status, work_at, sid, provider_status, error_message, body,
      audio_file_id, at, modified) AS (VALUES ${Array.from({ length: count }, () => "(CAST(? AS BIGINT), ?, ?, CAST(? AS BIGINT), ?, ?, NULL, ?, NULL, ?, ?)").join(", ")})
    UPDATE actions SET status = changes.status, work_at = changes.work_at, sid = changes.sid,
      provider_status = changes.provider_status, error_message = changes.error_message, body = changes.body,
      audio_file_id = changes.audio_file_id, at = changes.at, modified = changes.modified, lease_owner = NULL, lease_until = NULL
    FROM changes WHERE actions.id = changes.action_id AND actions.lease_owner = ? AND actions.status = changes.expected_status
    RETURNING id`)
const eventDeliveries = (count: number) =>
  db.prepare(`INSERT INTO webhook_deliveries (event_id, webhook_id, attempts, next_attempt_at, state, updated_at)
    SELECT e.id, w.id, 0, ?, 'pending', ? FROM events e JOIN webhooks w ON w.org_id = e.org_id AND w.disabled_at IS NULL
    WHERE e.id IN (${placeholders(count)})
      AND EXISTS (SELECT 1 FROM webhook_event_types t WHERE t.webhook_id = w.id AND t.type IN ('*', e.type))`)

function placeholders(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ")
}

/** Statements for a batch of n rows, prepared once per size (as Parley's driver keeps them). */
const bySize = <A>(make: (n: number) => A) => {
  const made = new Map<number, A>()
  return (n: number): A => {
    let statement = made.get(n)
    if (statement === undefined) {
      statement = make(n)
      made.set(n, statement)
    }
    return statement
  }
}
const chargeOf = bySize(charge)
const submissionsOf = bySize(submissions)
const changesOf = bySize(applyChange)
const deliveriesOf = bySize(eventDeliveries)
const sendsOf = bySize(simulatedSends)
const eventsOf = bySize(insertEvents)

interface ActionRow {
  readonly id: number
  readonly org_id: string
  readonly status: string
  readonly line: string
  readonly counterpart: string
  readonly body: string
  readonly read_at: string
  readonly at: string
  readonly owner_id: string | null
  readonly owner_name: string | null
  readonly sid: string | null
  readonly sent_by: string
  readonly modified: string
}

/** The event payload Parley stores: the message resource as the contract shows it. */
const messagePayload = (type: string, timestamp: string, a: ActionRow, status: string, sid: string | null) =>
  JSON.stringify({
    type,
    timestamp,
    data: {
      id: String(a.id),
      name: null,
      senderName: a.owner_name,
      linkedSenders: { Contact: null, Account: null, Vendor: null, Lead: null },
      from: a.line,
      to: a.counterpart,
      direction: "Outbound",
      body: a.body,
      status,
      type: "SMS",
      botId: null,
      read: a.read_at,
      at: a.at,
      scheduledFor: null,
      owner: a.owner_id === null ? null : { id: a.owner_id, name: a.owner_name },
      record: null,
      linkedRecords: [],
      sid,
      audioFileId: null,
      errorMessage: null,
      sentBy: a.sent_by,
      modified: timestamp
    }
  })

const eventId = () => `evt_${randomBytes(16).toString("base64url").slice(0, 22)}`

const numberOf = db.prepare("SELECT sid, phone_number, sms FROM numbers WHERE org_id = ? AND sid = ?")

/** The message's number, checked (the organisation's, allowed to the key, able to text), then the writes. */
const accept = db.transaction((key: KeyRow, message: NewMessage, idempotencyKey: string, fingerprint: string, now: number): string | Refusal => {
  const number = numberOf.get(key.org_id, message.fromNumberSid) as { sid: string; phone_number: string; sms: number } | undefined
  const restriction = JSON.parse(key.number_sids) as ReadonlyArray<string>
  if (number === undefined || number.sms !== 1 || (restriction.length > 0 && !restriction.includes(number.sid))) {
    return { status: 400, code: "INVALID_REQUEST", message: "fromNumberSid: not a number this key may text from." }
  }
  const row = actionRow(config, message, now)
  const at = row.at
  const { id } = insertAction.get(row) as { id: number }
  const event = eventId()
  const action: ActionRow = { ...row, id, status: "Queued", read_at: at, sid: null, modified: at }
  insertEvent.run(event, config.orgId, "message.queued", at, messagePayload("message.queued", at, action, "Queued", null))
  insertDeliveries.run(event, now, at, config.orgId, "message.queued")
  const response = JSON.stringify({ id: String(id), status: "accepted", test: false })
  insertKey.run(config.keyId, idempotencyKey, fingerprint, now + LOCK_MS, now + DAY, 202, response, now, now)
  return response
})

/** Marks a batch with its new status and writes one event per action, in one transaction. */
const settle = db.transaction((actions: ReadonlyArray<ActionRow>, from: string, to: string, sids: ReadonlyArray<string>, workAt: number | null) => {
  const now = Date.now()
  const timestamp = new Date(now).toISOString()
  const params: Array<unknown> = []
  actions.forEach((a, i) => {
    params.push(a.id, from, to, workAt, sids[i], to.toLowerCase(), a.body, a.at, timestamp)
  })
  changesOf(actions.length).run(...params, worker)
  const type = to === "Sent" ? "message.sent" : "message.delivered"
  const ids = actions.map(() => eventId())
  eventsOf(actions.length).run(
    ...actions.flatMap((a, i) => [ids[i], a.org_id, type, timestamp, messagePayload(type, timestamp, a, to, sids[i] ?? null)])
  )
  deliveriesOf(ids.length).run(now, timestamp, ...ids)
})

const chargeBatch = db.transaction((ids: ReadonlyArray<number>, orgId: string, now: number) => {
  const charged = chargeOf(ids.length).all(now, ...ids, worker) as ReadonlyArray<{ id: number }>
  const limits = allowance.get(orgId) as { readonly timezone: string } | undefined
  const period = monthOf(now, limits?.timezone ?? "UTC")
  usage.get(orgId, period)
  spend.run(orgId, period, charged.length)
  return charged.length
})

const dispatchOnce = (): number => {
  const now = Date.now()
  const batch = claim.all(worker, now + LEASE_MS, now, now) as ReadonlyArray<ActionRow>
  if (batch.length === 0) return 0
  const queued = batch.filter((a) => a.status === "Queued")
  const sent = batch.filter((a) => a.status === "Sent")
  if (queued.length > 0) {
    organisation.get(config.orgId)
    chargeBatch(queued.map((a) => a.id), config.orgId, now)
    providerAccount.get(config.orgId)
    submissionsOf(queued.length).all(...queued.map((a) => String(a.id)))
    const sids = queued.map(() => `SM${randomBytes(16).toString("hex")}`)
    sendsOf(queued.length).all(...queued.flatMap((a, i) => [String(a.id), sids[i], a.counterpart, now]))
    settle(queued, "Sending", "Sent", sids, now + (config.simStepMs ?? 1000))
  }
  if (sent.length > 0) {
    submissionsOf(sent.length).all(...sent.map((a) => String(a.id)))
    settle(sent, "Sent", "Delivered", sent.map((a) => a.sid ?? ""), null)
  }
  return batch.length
}

const nextDue = db.prepare(`SELECT work_at FROM actions WHERE work_at IS NOT NULL
  AND (lease_until IS NULL OR lease_until <= ?) ORDER BY work_at LIMIT 1`).pluck()
const MIN_PAUSE_MS = 10
const POLL_MS = 50

/** Parley's webhook delivery poll (the demo organisation has no endpoint: it finds nothing), every 100 ms. */
const deliveryOwner = `delivery_${randomBytes(16).toString("base64url")}`
const leaseDeliveries = db.prepare(`UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
  WHERE (event_id, webhook_id) IN (SELECT event_id, webhook_id FROM webhook_deliveries WHERE state = 'pending'
    AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
    AND webhook_id IN (SELECT id FROM webhooks WHERE disabled_at IS NULL) ORDER BY next_attempt_at LIMIT 50)`)
const leasedDeliveries = db.prepare(`SELECT d.event_id, d.webhook_id, d.attempts, w.url, e.payload
  FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
  WHERE d.lease_owner = ? AND d.state = 'pending' AND d.lease_until > ?`)

let stopped = false
// As Parley's dispatcher: a full batch goes straight on; otherwise a pause until the next action is due,
// at least MIN_PAUSE_MS (arrivals gather into one batch) and at most the poll interval.
const loop = () => {
  if (stopped) return
  const handled = dispatchOnce()
  if (handled >= BATCH) return void setImmediate(loop)
  const now = Date.now()
  const next = nextDue.get(now) as number | undefined
  setTimeout(loop, next === undefined ? POLL_MS : Math.min(POLL_MS, Math.max(MIN_PAUSE_MS, next - now)))
}
setTimeout(loop, POLL_MS)
const deliveries = setInterval(() => {
  const now = Date.now()
  leaseDeliveries.run(deliveryOwner, now + 60_000, now, now)
  leasedDeliveries.all(deliveryOwner, now)
}, 100)

const checkKey = keyChecker(db)
const server = messagesServer(config.keyId, checkKey, isRefusal, (key, message, idempotencyKey, fingerprint, res) => {
  const now = Date.now()
  const existing = findKey.get(config.keyId, idempotencyKey, now, now) as
    | { fingerprint: string; status: number | null; body: string | null }
    | undefined
  if (existing !== undefined) {
    if (existing.fingerprint !== fingerprint) return error(res, 400, "IDEMPOTENCY_KEY_REUSED", "Key reused.")
    if (existing.body === null) return error(res, 409, "ACTION_PROCESSING", "Still processing.")
    res.setHeader("idempotent-replayed", "true")
    return send(res, existing.status ?? 202, existing.body)
  }
  try {
    const answer = accept(key, message, idempotencyKey, fingerprint, now)
    if (typeof answer === "string") send(res, 202, answer)
    else error(res, answer.status, answer.code, answer.message)
  } catch (cause) {
    error(res, 500, "INTERNAL", String(cause))
  }
})
listen(server, () => {
  stopped = true
  clearInterval(deliveries)
  db.close()
})
