/**
 * The slowdown after wrong passwords, counted per email and per client address:
 * - an email may fail EMAIL_FREE_FAILURES times in a row; then each further attempt must wait, 30 seconds
 *   after that failure, doubling with every further failure, at most 15 minutes;
 * - an address (guessing across many emails) gets ADDRESS_FREE_FAILURES failures before the same waits;
 * - a right password clears its email's count; counts are forgotten 15 minutes after their last failure.
 * A waiting attempt is refused before its password is checked, so guessing costs the attacker the wait
 * and the server nothing. Counts live in the process's memory (bounded): on several replicas behind a
 * balancer each replica counts its own, which at most multiplies the allowance by the number of replicas.
 */
export const EMAIL_FREE_FAILURES = 5
export const ADDRESS_FREE_FAILURES = 20
export const FIRST_WAIT_SECONDS = 30
export const LONGEST_WAIT_SECONDS = 15 * 60
const FORGET_AFTER_MS = 15 * 60 * 1000
const MAX_ENTRIES = 10_000

interface Count {
  failures: number
  lastFailureAt: number
}

const waitAfter = (failures: number, free: number): number =>
  failures < free ? 0 : Math.min(FIRST_WAIT_SECONDS * 2 ** (failures - free), LONGEST_WAIT_SECONDS)

export class SignInThrottle {
  private readonly counts = new Map<string, Count>()

  private current(key: string, now: number): Count | undefined {
    const count = this.counts.get(key)
    if (count !== undefined && now - count.lastFailureAt > FORGET_AFTER_MS) {
      this.counts.delete(key)
      return undefined
    }
    return count
  }

  private remaining(key: string, free: number, now: number): number {
    const count = this.current(key, now)
    if (count === undefined) return 0
    const until = count.lastFailureAt + waitAfter(count.failures, free) * 1000
    return Math.max(0, Math.ceil((until - now) / 1000))
  }

  /** Seconds to wait before this attempt may be checked; 0 when it may be now. */
  waitSeconds(email: string, address: string, now: number): number {
    return Math.max(
      this.remaining(`email:${email}`, EMAIL_FREE_FAILURES, now),
      this.remaining(`address:${address}`, ADDRESS_FREE_FAILURES, now)
    )
  }

  failed(email: string, address: string, now: number): void {
    for (const key of [`email:${email}`, `address:${address}`]) {
      const count = this.current(key, now) ?? { failures: 0, lastFailureAt: now }
      count.failures++
      count.lastFailureAt = now
      this.counts.delete(key) // re-inserted last: the map's order is oldest failure first
      this.counts.set(key, count)
    }
    while (this.counts.size > MAX_ENTRIES) {
      const oldest = this.counts.keys().next()
      if (oldest.done === true) break
      this.counts.delete(oldest.value)
    }
  }

  succeeded(email: string): void {
    this.counts.delete(`email:${email}`)
  }
}
