/**
 * A service without Effect: the Promise client, its typed answers and its
 * error classes, against a real Parley server.
 */
import { type ActionRecord, createParleyClient, InvalidRequest, NotFound, ParleyConnectionError } from "@parley/core"
import { setting } from "./env.js"

const parley = createParleyClient({ baseUrl: setting("PARLEY_URL"), apiKey: setting("PARLEY_API_KEY") })

const { items: numbers } = await parley.resources.listNumbers()
const sender = numbers.find((n) => n.capabilities.sms)
if (sender === undefined) throw new Error("no SMS-capable number")
const text = { to: "+14155550123", fromNumberSid: sender.sid, body: "Hello from a consumer", channel: "SMS" } as const

// No Idempotency-Key given: each call makes its own, so two calls are two texts.
const first = await parley.messages.createMessage({ payload: text })
const second = await parley.messages.createMessage({ payload: text })
// The caller's own key: the second call replays the first.
const keyed = await parley.messages.createMessage({ headers: { "idempotency-key": "consumer-order-1" }, payload: text })
const replayed = await parley.messages.createMessage({ headers: { "idempotency-key": "consumer-order-1" }, payload: text })

const record: ActionRecord = await parley.messages.getMessage({ path: { id: first.id } })
const page = await parley.messages.listMessages()

const failure = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error("the call should have failed")
}
const missing = await failure(() => parley.messages.getMessage({ path: { id: "999999999" } }))
const invalid = await failure(() => parley.messages.createMessage({ payload: { ...text, to: "0123" } }))
const unreachable = await failure(() =>
  createParleyClient({ baseUrl: "http://127.0.0.1:9", apiKey: "parley_live_x" }).resources.listBots()
)

console.log(JSON.stringify({
  distinct: first.id !== second.id,
  replayed: keyed.id === replayed.id,
  status: record.status,
  body: record.body,
  listed: page.items.some((item) => item.id === first.id),
  notFound: missing instanceof NotFound ? missing.message : null,
  invalid: invalid instanceof InvalidRequest,
  unreachable: unreachable instanceof ParleyConnectionError
}))
