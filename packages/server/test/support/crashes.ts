/**
 * The crash tests' harness (issue 22): rounds in which a provider fake's next
 * answered create kills Parley (SIGKILL) 0–40 ms later — before, while or
 * after it commits the answer — and Parley is started again on the same
 * store, while the test keeps asking for actions as a client would (a request
 * the kill cut is asked again).
 */
import type { TestServer } from "./server.js"

/**
 * The dispatch lease the crash tests run with (PARLEY_DISPATCH_LEASE_MS), shortened from the default 30 s
 * (config.test.ts checks the default): an action a killed process held is taken over once it lapses, so
 * every kill round would otherwise wait 30 s for it. 10 s keeps two late renewals (every third of it) of
 * margin on a loaded machine, so a live process never loses an action it is still working on.
 */
export const CRASH_LEASE_MS = 10_000

/**
 * How long a killed request's Idempotency-Key stays reserved on Postgres (PARLEY_IDEMPOTENCY_LOCK_MS),
 * shortened from the default minute, which a client asking again after each kill would wait out. Safe
 * here: the holder is dead, and a crash test asks again one request at a time, so no live request is taken over.
 */
export const CRASH_IDEMPOTENCY_LOCK_MS = 5_000

/** The environment of a crash test's server: the short lease and reservation above. */
export const crashEnv = {
  PARLEY_DISPATCH_LEASE_MS: String(CRASH_LEASE_MS),
  PARLEY_IDEMPOTENCY_LOCK_MS: String(CRASH_IDEMPOTENCY_LOCK_MS)
} as const

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** How a test hands the harness its fake's "a create was answered" hook. */
export type ArmKill = (onAnswered: (() => void) | undefined) => void

/**
 * Runs `rounds` rounds; each asks for its actions (`round`) and ends once the kill it armed has happened
 * and the server is back. Answers the number of kills.
 */
export const crashRounds = async (options: {
  readonly rounds: number
  readonly server: TestServer
  readonly arm: ArmKill
  readonly round: (index: number) => Promise<void>
}): Promise<number> => {
  let kills = 0
  for (let index = 0; index < options.rounds; index++) {
    // The kill and restart, once the fake has answered a create: waited for as it happens, not polled.
    // (In an object: a promise resolved with a promise would wait for the restart, not for the answer.)
    const crash = new Promise<{ readonly restart: Promise<void> }>((armed) => {
      options.arm(() => {
        options.arm(undefined)
        armed({
          restart: (async () => {
            await sleep(Math.random() * 40)
            await options.server.restart("SIGKILL")
            kills++
          })()
        })
      })
    })
    await options.round(index)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), 120_000)
    })
    const answered = await Promise.race([crash, late])
    clearTimeout(timer)
    if (answered === undefined) throw new Error(`round ${index}: no create was answered within two minutes`)
    await answered.restart
  }
  options.arm(undefined)
  return kills
}

/** POSTs until the server answers 202 (a new Idempotency-Key each time: an action the kill hid is counted too). */
export const createRetrying = async (server: TestServer, key: string, path: string, body: unknown): Promise<void> => {
  for (let attempt = 0;; attempt++) {
    try {
      const response = await server.fetch(path, {
        key,
        method: "POST",
        headers: { "idempotency-key": `crash-${Date.now()}-${Math.random()}` },
        body: JSON.stringify(body)
      })
      if (response.status === 202) return
      if (attempt > 600) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
    } catch (error) {
      if (attempt > 600) throw error
    }
    await sleep(100)
  }
}
