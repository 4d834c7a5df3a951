// Dispatch planning, shared by the core's dispatcher and the server's: refusals, retries and when to look again.
import { describe, expect, it } from "vitest"
import * as DispatchPlan from "../src/domain/DispatchPlan.js"
import type { ProviderFailure } from "../src/ports/Providers.js"

const provider = { name: "acme", label: "Acme" }
const failure = (reason: ProviderFailure["reason"], status: number | null, retryAfterMs: number | null = null): ProviderFailure => ({
  _tag: "AcmeError",
  reason,
  status,
  code: null,
  message: "no",
  retryAfterMs
})
const attempted = (attempts: number) => ({ provider, orgId: "org_1", status: "Sending" as const, attempts, now: 1_000, lookAgainMs: 60_000 })

describe("DispatchPlan", () => {
  it("a refusal fails at once; refused credentials say which command fixes them", () => {
    expect(DispatchPlan.afterFailure(attempted(1), failure("rejected", 400))).toMatchObject({ status: "Failed", workAt: null })
    expect(DispatchPlan.afterFailure(attempted(1), failure("auth_failed", 401)).errorMessage).toBe(
      "Acme refused the organisation's credentials (no); update them with `parley providers set --org org_1 --kind acme …`."
    )
  })

  it("a retry waits out the backoff and Retry-After; an attempt that may have sent waits for the provider to show it", () => {
    expect(DispatchPlan.afterFailure(attempted(3), failure("rate_limited", 429))).toEqual({ status: "Sending", workAt: 1_000 + 4_000 })
    expect(DispatchPlan.afterFailure(attempted(1), failure("rate_limited", 429, 9_000)).workAt).toBe(10_000)
    expect(DispatchPlan.afterFailure(attempted(1), failure("unavailable", 503)).workAt).toBe(1_000 + 30_000)
  })

  it("gives up after MAX_ATTEMPTS, and after twice as many when the attempts may have sent", () => {
    const max = DispatchPlan.MAX_ATTEMPTS
    expect(DispatchPlan.afterFailure(attempted(max), failure("rate_limited", 429)).status).toBe("Failed")
    expect(DispatchPlan.afterFailure(attempted(max), failure("unknown_outcome", null)).status).toBe("Sending")
    expect(DispatchPlan.afterFailure(attempted(2 * max), failure("unknown_outcome", null)).errorMessage).toBe(
      `Acme did not accept it after ${2 * max} attempts (last: no).`
    )
  })

  it("looks again every interval for two days; a provider without a journal stops once nothing moves", () => {
    expect(DispatchPlan.lookAgainAt(500, 0, 1_000, "nothing new")).toBe(1_500)
    expect(DispatchPlan.lookAgainAt(500, 0, DispatchPlan.MAX_TRACKING_MS + 1, "moved")).toBeNull()
    expect(DispatchPlan.lookAgainAt(500, null, 1_000, "moved")).toBe(1_500)
    expect(DispatchPlan.lookAgainAt(500, null, 1_000, "nothing new")).toBeNull()
  })
})
