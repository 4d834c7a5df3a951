/**
 * One event delivery on the wire: a POST to the endpoint's URL, made only to
 * an address the policy allows (see the core's WebhookAddresses). The decision
 * is taken on the address connected to: an IP literal before connecting, a
 * name inside the connection's own DNS lookup, on every address the answer
 * holds. So a name that resolves to a metadata service (`….nip.io`), or whose
 * answer changes after a check (DNS rebinding), never reaches it: there is no
 * second lookup to race.
 *
 * node:http rather than fetch: fetch offers no hook into the lookup its
 * connections use. Redirects are not followed (a 3xx is an answer like any
 * other non-2xx), so a receiver cannot bounce a delivery elsewhere either.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import type { LookupFunction } from "node:net"
import { WebhookAddresses } from "@parley/core/internal"

export type PostResult =
  | { readonly _tag: "Answered"; readonly status: number; readonly retryAfter: string | null }
  /** The address is not one deliveries may reach: no connection was made. */
  | { readonly _tag: "Refused"; readonly reason: string }
  | { readonly _tag: "Unreachable"; readonly reason: string }

/** How names are resolved: node's `dns.lookup` (the system resolver), or a stand-in in tests. */
export type Resolve = (hostname: string, callback: (error: Error | null, addresses: ReadonlyArray<LookupAddress>) => void) => void

const systemResolve: Resolve = (hostname, callback) =>
  dnsLookup(hostname, { all: true }, (error, addresses) => callback(error, addresses ?? []))

export class AddressRefused extends Error {
  override readonly name = "AddressRefused"
}

/** A lookup for net.connect that answers only allowed addresses, and fails when the name has none. */
export const guardedLookup = (allowed: WebhookAddresses.AllowedNetworks, resolve: Resolve = systemResolve): LookupFunction =>
  (hostname, options, answer) => {
    resolve(hostname, (error, addresses) => {
      if (error !== null) return answer(error, [])
      const wanted = addresses.filter((a) => options.family === undefined || options.family === 0 || a.family === options.family)
      const usable = wanted.filter((a) => WebhookAddresses.refusal(allowed, a.address) === null)
      const first = usable[0]
      if (first === undefined) {
        const reasons = wanted.map((a) => WebhookAddresses.refusal(allowed, a.address)).filter((r) => r !== null)
        return answer(new AddressRefused(`${hostname} resolves to ${reasons[0] ?? "no address"}`), [])
      }
      if (options.all === true) answer(null, [...usable])
      else answer(null, first.address, first.family)
    })
  }

export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly allowed: WebhookAddresses.AllowedNetworks
  readonly timeoutMs: number
  readonly signal?: AbortSignal | undefined
  readonly resolve?: Resolve | undefined
}

export const postWebhook = (url: string, options: PostOptions): Promise<PostResult> =>
  new Promise((done) => {
    let target: URL
    try {
      target = new URL(url)
    } catch {
      return done({ _tag: "Refused", reason: "the URL is not valid" })
    }
    if (WebhookAddresses.isMetadataName(target.hostname)) {
      return done({ _tag: "Refused", reason: `${target.hostname} is a cloud metadata service` })
    }
    if (WebhookAddresses.isIpLiteral(target.hostname)) {
      const refused = WebhookAddresses.refusal(options.allowed, target.hostname)
      if (refused !== null) return done({ _tag: "Refused", reason: refused })
    }
    const timeout = AbortSignal.timeout(options.timeoutMs)
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout])
    const send = target.protocol === "https:" ? httpsRequest : httpRequest
    const request = send(target, {
      method: "POST",
      headers: { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) },
      lookup: guardedLookup(options.allowed, options.resolve),
      signal
    }, (response: IncomingMessage) => {
      const retryAfter = response.headers["retry-after"]
      done({ _tag: "Answered", status: response.statusCode ?? 0, retryAfter: retryAfter ?? null })
      response.destroy() // the answer's body is not read: only its status counts
    })
    request.on("error", (error) => {
      if (error instanceof AddressRefused) return done({ _tag: "Refused", reason: error.message })
      done({
        _tag: "Unreachable",
        reason: timeout.aborted ? `no answer within ${options.timeoutMs / 1000} s` : "connection failed"
      })
    })
    request.end(options.body)
  })
