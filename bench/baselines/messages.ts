/**
 * The HTTP side the write baselines share: a raw `node:http` server for POST /api/v1/messages that
 * checks the Bearer key (constant time) and the Idempotency-Key header, reads and parses the body,
 * checks its three fields and fingerprints it, then hands the message to the baseline's own storage.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { createServer, type Server, type ServerResponse } from "node:http"

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

const isMessage = (value: unknown): value is NewMessage => {
  if (typeof value !== "object" || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v["to"] === "string" && typeof v["fromNumberSid"] === "string" && typeof v["body"] === "string"
}

export const messagesServer = (
  key: string,
  keyId: string,
  accept: (message: NewMessage, idempotencyKey: string, fingerprint: string, res: ServerResponse) => void
): Server => {
  const expected = Buffer.from(`Bearer ${key}`)
  const authorized = (header: string | undefined) => {
    if (header === undefined) return false
    const given = Buffer.from(header)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }
  return createServer((req, res) => {
    if (req.url === "/healthz") return send(res, 200, "{\"status\":\"ok\"}")
    if (!authorized(req.headers.authorization)) return error(res, 401, "UNAUTHORIZED", "Missing or invalid API key.")
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
      const fingerprint = createHash("sha256").update(`POST /api/v1/messages\n${keyId}\n`).update(raw).digest("hex")
      accept(parsed, idempotencyKey, fingerprint, res)
    })
  })
}
