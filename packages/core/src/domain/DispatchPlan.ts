/**
 * Dispatch planning: what a provider's answer does to an action, decided
 * without I/O, for every dispatcher (the core's Dispatch, the server's
 * batched one), so that both give the same messages, retry with the same
 * waits and look again on the same rule:
 * - rejected (an invalid number, an unsubscribed recipient, a region not
 *   allowed…): Failed, with the provider's code and message;
 * - credentials refused: Failed at once, saying how to fix the
 *   organisation's provider settings (retrying could never succeed);
 * - rate limited, unavailable, or unknown: tried again with exponential
 *   backoff (honouring Retry-After), up to MAX_ATTEMPTS, then Failed — only by
 *   a dispatcher that keeps a journal of attempts, since an attempt whose
 *   outcome is unknown must be reconciled with the provider before another;
 * - after an answer that is not final, the action is looked at again (its
 *   provider's recheck) every `lookAgainMs`, for at most two days.
 */
import type { Change, ProviderChoice, ProviderFailure } from "../ports/Providers.js"
import type { RecordStatus } from "../contract/Statuses.js"

/** Attempts before giving up: with the backoff below, about two hours of retrying. */
export const MAX_ATTEMPTS = 16
const BASE_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 15 * 60_000
/** After an unknown outcome, the provider may still be creating the message or call: wait before looking. */
export const UNKNOWN_OUTCOME_WAIT_MS = 30_000
/** How long a dispatcher keeps asking a provider about an action whose reports stopped: two days. */
export const MAX_TRACKING_MS = 48 * 3_600_000

export const backoffMs = (attempts: number, retryAfterMs: number | null): number =>
  Math.max(retryAfterMs ?? 0, Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1)))

/** Whether a failed attempt may have reached the provider (the next must reconcile before sending). */
export const mayHaveSent = (error: ProviderFailure): boolean =>
  error.reason === "unknown_outcome" || (error.status !== null && error.status >= 500)

const codeOf = (error: ProviderFailure) => (error.code === undefined || error.code === null ? "" : `${error.code}: `)

export const failed = (errorMessage: string, providerStatus?: string): Change => ({
  status: "Failed",
  workAt: null,
  errorMessage,
  ...(providerStatus === undefined ? {} : { providerStatus })
})

/** A refusal no retry can change (rejected, credentials refused): the Failed change; null for the others. */
export const refused = (
  provider: Pick<ProviderChoice, "name" | "label">,
  orgId: string,
  error: ProviderFailure
): Change | null => {
  switch (error.reason) {
    case "rejected":
    case "unsubscribed":
      return failed(`${codeOf(error)}${error.message}`, "failed")
    case "auth_failed":
      return failed(
        `${provider.label} refused the organisation's credentials (${codeOf(error)}${error.message}); ` +
          `update them with \`parley providers set --org ${orgId} --kind ${provider.name} …\`.`,
        "failed"
      )
    default:
      return null
  }
}

/** Failed after the last attempt a dispatcher makes. */
export const gaveUp = (provider: Pick<ProviderChoice, "label">, error: ProviderFailure, attempts: number): Change =>
  failed(`${provider.label} did not accept it after ${attempts} ${attempts === 1 ? "attempt" : "attempts"} (last: ${codeOf(error)}${error.message}).`)

/**
 * What an unsuccessful attempt does to an action, for a dispatcher that journals its attempts: Failed for a
 * refusal, otherwise tried again after a backoff (an attempt that may have sent after at least the time a
 * provider needs to show it, and twice as many times: it is never given up on unseen), until the attempts
 * run out.
 */
export const afterFailure = (
  attempted: {
    readonly provider: Pick<ProviderChoice, "name" | "label">
    readonly orgId: string
    readonly status: RecordStatus
    readonly attempts: number
    readonly now: number
    /** The longest a dispatcher waits before looking at a provider again (tests shorten it). */
    readonly lookAgainMs: number
  },
  error: ProviderFailure
): Change => {
  const refusal = refused(attempted.provider, attempted.orgId, error)
  if (refusal !== null) return refusal
  const unknown = mayHaveSent(error)
  if (attempted.attempts >= (unknown ? 2 * MAX_ATTEMPTS : MAX_ATTEMPTS)) {
    return gaveUp(attempted.provider, error, attempted.attempts)
  }
  const wait = backoffMs(attempted.attempts, error.retryAfterMs)
  const unknownWait = Math.min(UNKNOWN_OUTCOME_WAIT_MS, attempted.lookAgainMs)
  return { status: attempted.status, workAt: attempted.now + (unknown ? Math.max(wait, unknownWait) : wait) }
}

/**
 * When to look at an action its provider has again: `lookAgainMs` after now, while it is not final, for at
 * most MAX_TRACKING_MS after it was first handed over. A provider that keeps no journal (`firstAt` null: the
 * simulator) answers the same every time, so once a look found nothing new it never will.
 */
export const lookAgainAt = (
  lookAgainMs: number,
  firstAt: number | null,
  now: number,
  found: "moved" | "nothing new"
): number | null =>
  firstAt === null
    ? found === "moved" ? now + lookAgainMs : null
    : now - firstAt > MAX_TRACKING_MS
    ? null
    : now + lookAgainMs
