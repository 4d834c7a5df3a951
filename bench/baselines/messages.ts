/**
 * The HTTP side the write baselines share: a raw `node:http` server for POST /api/v1/messages that
 * checks the Bearer key (as the baseline says: against the store, or one key in constant time) and the
 * Idempotency-Key header, reads and parses the body, checks its fields and fingerprints it, then hands
 * the message to the baseline's own storage.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { Refusal } from "./keys.js"

export interface NewMessage {
  readonly to: string
  readonly fromNumberSid: string
  readonly body: string
}

export const send = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

export const error = (res: ServerResponse, status: number, code: string, message: string) =>
  send(res, status, JSON.stringify({ error: { code, message } }))

const E164 = /^\+[1-9]\d{6,14}$/

const isMessage = (value: unknown): value is NewMessage => {
  if (typeof value !== "object" || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v["to"] === "string" && E164.test(v["to"]) && typeof v["fromNumberSid"] === "string" &&
    typeof v["body"] === "string" && v["body"].length > 0 && v["body"].length <= 1600
}

/** One key, compared in constant time: the reference baseline's check, no store. */
export const oneKey = (key: string) => {
  const expected = Buffer.from(`Bearer ${key}`)
  return (header: string | undefined): true | Refusal => {
    const given = Buffer.from(header ?? "")
    return given.length === expected.length && timingSafeEqual(given, expected)
      ? true
      : { status: 401, code: "UNAUTHORIZED", message: "Missing or invalid API key." }
  }
}

/** `authenticate` answers the caller (passed on to `accept`) or why it is refused. */
export const messagesServer = <Caller>(
  keyId: string,
  authenticate: (authorization: string | undefined) => Caller | Refusal,
  isRefused: (checked: Caller | Refusal) => checked is Refusal,
  accept: (caller: Caller, message: NewMessage, idempotencyKey: string, fingerprint: string, res: ServerResponse) => void
): Server => {
  return createServer((req: IncomingMessage, res) => {
    if (req.url === "/healthz") return send(res, 200, "{\"status\":\"ok\"}")
    const caller = authenticate(req.headers.authorization)
    if (isRefused(caller)) return error(res, caller.status, caller.code, caller.message)
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
      if (!isMessage(parsed)) {
        return error(res, 400, "INVALID_REQUEST", "to (E.164), fromNumberSid and body (1–1,600 characters) are required.")
      }
      const fingerprint = createHash("sha256").update(`POST /api/v1/messages\n${keyId}\n`).update(raw).digest("hex")
      accept(caller, parsed, idempotencyKey, fingerprint, res)
    })
  })
}
