/**
 * The slowdown after wrong passwords, after OWASP's "slow down online guessing with device cookies":
 * - an email may fail EMAIL_FREE_FAILURES times from one client address; then each further attempt from
 *   that address must wait, 30 seconds after that failure, doubling with every further failure, at most
 *   15 minutes. Another client is not held by it, so a guesser cannot lock the real administrator out;
 * - an address (guessing across many emails) gets ADDRESS_FREE_FAILURES failures before the same waits;
 * - an email gets ACCOUNT_FREE_FAILURES failures from all untrusted clients together (a guess spread over
 *   many addresses) before the same waits apply to every untrusted client of it;
 * - a client that signed in to that email before carries a device cookie (see DeviceCookies) and is
 *   counted on its own, by that cookie, with EMAIL_FREE_FAILURES free failures: what strangers do to the
 *   email does not hold it back.
 * An attempt is counted when it arrives, before its password is hashed, in one synchronous step (so a
 * burst sent in parallel is counted as it comes: the sixth of twelve at once waits); a right password
 * takes its attempt back and clears its client's count. Counts are forgotten 15 minutes after their last
 * failure. They live in the process's memory (bounded): on several replicas behind a balancer each
 * replica counts its own, which at most multiplies the allowance by the number of replicas.
 */
export const EMAIL_FREE_FAILURES = 5
export const ADDRESS_FREE_FAILURES = 20
export const ACCOUNT_FREE_FAILURES = 100
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

/** Who is trying: the email, the client's address, and the device cookie's id when it is valid for the email. */
export interface SignInClient {
  readonly email: string
  readonly address: string
  readonly device: string | null
}

/** What arrived: either a wait (in seconds) or an attempt, counted already, to settle once checked. */
export type Admission =
  | { readonly _tag: "Wait"; readonly seconds: number }
  | { readonly _tag: "Counted"; readonly succeeded: () => void }

interface Rule {
  readonly key: string
  readonly free: number
}

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

  private remaining(rule: Rule, now: number): number {
    const count = this.current(rule.key, now)
    if (count === undefined) return 0
    const until = count.lastFailureAt + waitAfter(count.failures, rule.free) * 1000
    return Math.max(0, Math.ceil((until - now) / 1000))
  }

  private rules(client: SignInClient): ReadonlyArray<Rule> {
    return client.device !== null
      ? [{ key: `device:${client.device}`, free: EMAIL_FREE_FAILURES }]
      : [
        { key: `pair:${client.address}\u0000${client.email}`, free: EMAIL_FREE_FAILURES },
        { key: `address:${client.address}`, free: ADDRESS_FREE_FAILURES },
        { key: `account:${client.email}`, free: ACCOUNT_FREE_FAILURES }
      ]
  }

  /**
   * Either the seconds this attempt must wait (nothing counted), or the attempt counted as a failure until
   * its `succeeded` says otherwise. Synchronous: nothing can slip in between the check and the count.
   */
  arrive(client: SignInClient, now: number): Admission {
    const rules = this.rules(client)
    const wait = Math.max(0, ...rules.map((rule) => this.remaining(rule, now)))
    if (wait > 0) return { _tag: "Wait", seconds: wait }
    for (const rule of rules) {
      const count = this.current(rule.key, now) ?? { failures: 0, lastFailureAt: now }
      count.failures++
      count.lastFailureAt = now
      this.counts.delete(rule.key) // re-inserted last: the map's order is oldest failure first
      this.counts.set(rule.key, count)
    }
    while (this.counts.size > MAX_ENTRIES) {
      const oldest = this.counts.keys().next()
      if (oldest.done === true) break
      this.counts.delete(oldest.value)
    }
    return {
      _tag: "Counted",
      succeeded: () => {
        const [own, ...shared] = rules
        if (own !== undefined) this.counts.delete(own.key)
        for (const rule of shared) {
          const count = this.counts.get(rule.key)
          if (count !== undefined && count.failures > 0) count.failures--
        }
      }
    }
  }
}
