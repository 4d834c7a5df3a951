/**
 * Signing in and out, and setting a password from a one-time link. Wrong passwords are slowed down per
 * email and client, per address and per device (SignInThrottle, DeviceCookies), counted before any hashing;
 * hashing itself waits its turn in a short queue (Passwords.inHashingTurn). An unknown email costs the same
 * time as a wrong password, and both get the same answer, so the page does not tell which emails have
 * accounts.
 */
import { Clock, Effect, Option } from "effect"
import { AdminStore, normalEmail, SESSION_HOURS } from "../AdminStore.js"
import {
  clearedCookie,
  type ConsoleRequest,
  cookieValue,
  page,
  redirect,
  SESSION_COOKIE,
  sessionCookie,
  withCookies
} from "../ConsoleHttp.js"
import { AuditLog } from "../AuditLog.js"
import { DEVICE_COOKIE, deviceCookie, type DeviceCookies } from "../DeviceCookies.js"
import { html } from "../Html.js"
import { type FieldErrors, layout, textField } from "../Layout.js"
import { decoyHash, hashPassword, inHashingTurn, MIN_PASSWORD_LENGTH, passwordProblem, verifyPassword } from "../Passwords.js"
import type { SignInThrottle } from "../SignInThrottle.js"
import { secondStepFor } from "./SecondStepPage.js"

const NOTICES: Readonly<Record<string, string>> = {
  "signed-out": "You are signed out.",
  "step-expired": "That sign-in took too long or was cancelled: sign in again.",
  "password-set": "Your password is set: sign in with it."
}

const signInForm = (
  email: string,
  errors: FieldErrors,
  alert: string | null,
  notice: string | undefined,
  status = 200,
  headers: Record<string, string> = {}
) =>
  page(
    layout({
      title: "Sign in",
      session: null,
      notice,
      alert,
      body: html`<form class="card" method="post" action="/admin/sign-in" novalidate>
${textField({ name: "email", label: "Email", type: "email", value: email, errors, autocomplete: "username", required: true })}
${textField({ name: "password", label: "Password", type: "password", errors, autocomplete: "current-password", required: true })}
<button type="submit">Sign in</button>
</form>`
    }),
    { status, headers }
  )

export const signInPage = (request: ConsoleRequest) =>
  Effect.succeed(signInForm("", {}, null, NOTICES[request.query.get("done") ?? ""]))

/**
 * The throttles and the device cookies of one process's console: `throttle` counts wrong passwords, `codes`
 * wrong two-factor codes (apart, so that the right password does not clear a count of wrong codes).
 */
export interface SignInGuards {
  readonly throttle: SignInThrottle
  readonly codes: SignInThrottle
  readonly devices: DeviceCookies
}

const busy = (email: string, seconds: number) =>
  signInForm(
    email,
    { password: `The server is busy checking other sign-ins: try again in ${seconds} seconds.` },
    "Not signed in: the server is busy.",
    undefined,
    503,
    { "retry-after": String(seconds) }
  )

export const signIn = ({ devices, throttle }: SignInGuards) => (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const email = normalEmail(request.form.get("email") ?? "")
    const password = request.form.get("password") ?? ""
    const now = yield* Clock.currentTimeMillis
    const device = devices.deviceOf(cookieValue(request.cookie, DEVICE_COOKIE), email)
    const admission = throttle.arrive({ email, address: request.address, device }, now)
    if (admission._tag === "Wait") {
      return signInForm(
        email,
        { password: `Too many wrong passwords: try again in ${admission.seconds} seconds.` },
        "Too many failed sign-ins; wait before trying again.",
        undefined,
        429,
        { "retry-after": String(admission.seconds) }
      )
    }
    const store = yield* AdminStore
    const checked = yield* inHashingTurn(Effect.gen(function*() {
      const admin = yield* store.findByEmail(email)
      const hash = Option.isSome(admin) && admin.value.passwordHash !== null ? admin.value.passwordHash : yield* decoyHash
      const matches = yield* verifyPassword(password, hash)
      return { admin, signedIn: Option.isSome(admin) && admin.value.passwordHash !== null && matches }
    })).pipe(Effect.catchTag("PasswordsBusy", (refused) => Effect.succeed(refused)))
    if (!("signedIn" in checked)) return busy(email, checked.retryAfterSeconds)
    const log = yield* AuditLog
    if (Option.isNone(checked.admin) || !checked.signedIn) {
      // A wrong password for an account goes to that account's organisation; an unknown email belongs to none.
      // (Only guesses the throttle let through get here, so a flood of them cannot flood the log.)
      if (Option.isSome(checked.admin)) {
        yield* log.record({
          orgId: checked.admin.value.orgId,
          actor: email,
          kind: "admin.sign-in-failed",
          address: request.address
        })
      }
      return signInForm(email, { password: "The email or the password is wrong." }, "Not signed in.", undefined, 401)
    }
    admission.succeeded()
    const admin = checked.admin.value
    // With two-factor on (or required and not yet set up), the right password opens only the second step.
    const step = yield* secondStepFor(admin)
    if (step !== null) return step
    yield* log.record({ orgId: admin.orgId, actor: email, kind: "admin.signed-in", address: request.address })
    const token = yield* store.openSession(admin)
    return withCookies(redirect("/admin/keys"), [
      sessionCookie(token, SESSION_HOURS * 3600),
      deviceCookie(devices.issue(email))
    ])
  })

export const signOut = (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const token = cookieValue(request.cookie, SESSION_COOKIE)
    if (token !== undefined) yield* (yield* AdminStore).closeSession(token)
    return withCookies(redirect("/admin/sign-in?done=signed-out"), [clearedCookie])
  })

const setPasswordForm = (token: string, errors: FieldErrors, status = 200) =>
  page(
    layout({
      title: "Set your password",
      session: null,
      alert: Object.keys(errors).length === 0 ? null : "The password was not set: see below.",
      body: html`<form class="card" method="post" action="/admin/set-password" novalidate>
<input type="hidden" name="token" value="${token}">
${
        textField({
          name: "password",
          label: "New password",
          type: "password",
          errors,
          autocomplete: "new-password",
          required: true,
          hint: `At least ${MIN_PASSWORD_LENGTH} characters.`
        })
      }
<button type="submit">Set password</button>
</form>`
    }),
    { status }
  )

const linkGone = () =>
  page(
    layout({
      title: "Link used or expired",
      session: null,
      body: html`<p>This sign-in link was used already or has expired. Ask for a new one (<code>pnpm parley admins create</code> after <code>admins remove</code>).</p>`
    }),
    { status: 404 }
  )

export const setPasswordPage = (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const token = request.query.get("token") ?? ""
    const admin = yield* (yield* AdminStore).findByLink(token)
    return Option.isNone(admin) ? linkGone() : setPasswordForm(token, {})
  })

export const setPassword = (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const token = request.form.get("token") ?? ""
    const password = request.form.get("password") ?? ""
    const problem = passwordProblem(password)
    if (problem !== null) return setPasswordForm(token, { password: `The password ${problem}.` }, 400)
    const hashed = yield* inHashingTurn(hashPassword(password)).pipe(Effect.either)
    if (hashed._tag === "Left") {
      return setPasswordForm(token, { password: "The server is busy: try again in a moment." }, 503)
    }
    const redeemed = yield* (yield* AdminStore).redeemLink(token, hashed.right)
    return redeemed ? redirect("/admin/sign-in?done=password-set") : linkGone()
  })
