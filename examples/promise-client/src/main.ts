/**
 * A service that does not use Effect: plain promises, typed answers, and
 * errors as classes to catch with `instanceof`. Every endpoint of the
 * contract is a method; a text needs no Idempotency-Key of yours (the client
 * makes one per call and keeps it across its own retries of 429 and 503), but
 * pass your own when a retry of *your* job must not send twice.
 *
 *   PARLEY_URL=http://localhost:8787 PARLEY_API_KEY=parley_live_… pnpm --filter @parley/example-promise-client start
 */
import { createParleyClient, InvalidRequest, NotFound, RateLimited } from "@parley/core"

const parley = createParleyClient({
  baseUrl: process.env["PARLEY_URL"] ?? "http://localhost:8787",
  apiKey: process.env["PARLEY_API_KEY"] ?? ""
})

const main = async () => {
  const { items: numbers } = await parley.resources.listNumbers()
  const sender = numbers.find((n) => n.capabilities.sms)
  if (sender === undefined) return console.error("No SMS-capable number is permitted to this key.")
  console.log(`Sending from ${sender.friendlyName} (${sender.phoneNumber})`)

  const ack = await parley.messages.createMessage({
    headers: { "idempotency-key": `order-1042-shipped` },
    payload: { to: "+14155550123", fromNumberSid: sender.sid, body: "Your order shipped", channel: "SMS" }
  })
  console.log(`Accepted: ${JSON.stringify(ack)}`)
  if (!ack.test) {
    const record = await parley.messages.getMessage({ path: { id: ack.id } })
    console.log(`Record ${record.id}: ${record.status} "${record.body}"`)
  }

  const { items: recent } = await parley.messages.listMessages({ urlParams: { status: ["Queued"] } })
  console.log(`${recent.length} queued texts on the first page`)

  try {
    await parley.messages.getMessage({ path: { id: "999999999" } })
  } catch (error) {
    if (error instanceof NotFound) console.log(`As expected: ${error.message} (request ${error.requestId})`)
    else throw error
  }
  try {
    await parley.messages.createMessage({ payload: { to: "not a number", fromNumberSid: sender.sid, body: "x", channel: "SMS" } })
  } catch (error) {
    // Refused by the contract's schemas before it left this process.
    if (error instanceof InvalidRequest) console.log(`Refused locally: ${error.message.split("\n")[0]}`)
    else throw error
  }
}

main().catch((error: unknown) => {
  if (error instanceof RateLimited) console.error(`Still rate limited after the client's retries: ${error.message}`)
  else console.error(error)
  process.exitCode = 1
})
