/**
 * The reference implementation of Standard Webhooks (the `standardwebhooks` package), used to sign deliveries
 * independently of both Parley's signer and the trigger's verifier. It is a dependency of the server package, which
 * these tests already start; it is loaded from there so this package's manifest (and the workspace lockfile) need
 * not change for it.
 */
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

interface StandardWebhook {
  sign(msgId: string, timestamp: Date, payload: string | Buffer): string
  verify(payload: string | Buffer, headers: Record<string, string>): unknown
}

const SERVER_PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "server", "package.json")
const { Webhook } = createRequire(SERVER_PACKAGE)("standardwebhooks") as {
  Webhook: new (secret: string) => StandardWebhook
}

/** Signs a delivery as a Standard Webhooks sender would, with the given secret and time. */
export function signedHeaders(secret: string, id: string, at: Date, body: string): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(id, at, body)
  }
}

/** Throws unless the reference implementation accepts the delivery. */
export function verifyWithReference(secret: string, body: string | Buffer, headers: Record<string, string>): void {
  new Webhook(secret).verify(body, headers)
}
