/**
 * Checking a second factor: a code from the administrator's authenticator (each time step once) or one of
 * their recovery codes (each once). Wrong codes are slowed down as wrong passwords are (SignInThrottle,
 * with a count of its own, so that the right password does not clear the count of wrong codes), and each
 * one is written to the audit log — without what was typed.
 */
import { Clock, Effect } from "effect"
import { AuditLog } from "./AuditLog.js"
import type { SignInClient, SignInThrottle } from "./SignInThrottle.js"
import { looksLikeRecoveryCode, looksLikeTotp, matchingStep, recoveryCodeHash } from "./TotpCodes.js"
import { TwoFactorStore } from "./TwoFactorStore.js"

export type CodeCheck =
  | { readonly _tag: "Wait"; readonly seconds: number }
  | { readonly _tag: "Wrong" }
  | { readonly _tag: "Right"; readonly via: "authenticator" | "recovery code"; readonly step: number | null }

/** Who is answering, for the throttle and the audit log. */
export interface Answerer extends SignInClient {
  readonly adminId: string
  readonly orgId: string
}

/**
 * Checks `typed` against `secret` (the confirmed one, or one being set up when `confirming`), or against the
 * recovery codes when `recovery` allows them. A confirmed secret's step is recorded as used; a step being set
 * up is returned for `activate` to record.
 */
export const checkCode = (
  throttle: SignInThrottle,
  who: Answerer,
  typed: string,
  options: { readonly secret: string; readonly recovery: boolean; readonly confirming: boolean; readonly where: string }
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const admission = throttle.arrive(who, now)
    if (admission._tag === "Wait") return { _tag: "Wait", seconds: admission.seconds } as const
    const store = yield* TwoFactorStore
    let result: CodeCheck = { _tag: "Wrong" }
    if (looksLikeTotp(typed)) {
      const step = matchingStep(options.secret, typed, now)
      if (step !== null && (options.confirming || (yield* store.acceptStep(who.adminId, step)))) {
        result = { _tag: "Right", via: "authenticator", step }
      }
    } else if (options.recovery && looksLikeRecoveryCode(typed) && (yield* store.useRecoveryCode(who.adminId, recoveryCodeHash(typed)))) {
      result = { _tag: "Right", via: "recovery code", step: null }
    }
    if (result._tag === "Right") {
      admission.succeeded()
    } else {
      yield* (yield* AuditLog).record({
        orgId: who.orgId,
        actor: who.email,
        kind: "admin.two-factor-failed",
        details: [["where", options.where]],
        address: who.address
      })
    }
    return result
  })

export const waitText = (seconds: number) => `Too many wrong codes: try again in ${seconds} seconds.`
export const WRONG_CODE = "That code is not right, or was used already. Type the code your app shows now."
