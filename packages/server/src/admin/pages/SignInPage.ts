/**
 * Signing in and out, and setting a password from a one-time link. Wrong passwords are slowed down per
 * email and per address (SignInThrottle); an unknown email costs the same time as a wrong password, and
 * both get the same answer, so the page does not tell which emails have accounts.
 */
import { Clock, Effect, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { AdminStore, normalEmail, SESSION_HOURS } from "../AdminStore.js"
import { clearedCookie, type ConsoleRequest, cookieValue, page, redirect, SESSION_COOKIE, sessionCookie } from "../ConsoleHttp.js"
import { isHttps } from "../ConsoleUrl.js"
import { html } from "../Html.js"
import { type FieldErrors, layout, textField } from "../Layout.js"
import { decoyHash, hashPassword, MIN_PASSWORD_LENGTH, passwordProblem, verifyPassword } from "../Passwords.js"
import type { SignInThrottle } from "../SignInThrottle.js"

const NOTICES: Readonly<Record<string, string>> = {
  "signed-out": "You are signed out.",
  "password-set": "Your password is set: sign in with it."
}

const signInForm = (email: string, errors: FieldErrors, alert: string | null, notice: string | undefined, status = 200) =>
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
    { status }
  )

export const signInPage = (request: ConsoleRequest) =>
  Effect.succeed(signInForm("", {}, null, NOTICES[request.query.get("done") ?? ""]))

export const signIn = (throttle: SignInThrottle) => (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const email = normalEmail(request.form.get("email") ?? "")
    const password = request.form.get("password") ?? ""
    const now = yield* Clock.currentTimeMillis
    const wait = throttle.waitSeconds(email, request.address, now)
    if (wait > 0) {
      return signInForm(
        email,
        { password: `Too many wrong passwords: try again in ${wait} seconds.` },
        "Too many failed sign-ins; wait before trying again.",
        undefined,
        429
      )
    }
    const store = yield* AdminStore
    const admin = yield* store.findByEmail(email)
    const hash = Option.isSome(admin) && admin.value.passwordHash !== null ? admin.value.passwordHash : yield* decoyHash
    const matches = yield* verifyPassword(password, hash)
    if (Option.isNone(admin) || admin.value.passwordHash === null || !matches) {
      throttle.failed(email, request.address, now)
      return signInForm(email, { password: "The email or the password is wrong." }, "Not signed in.", undefined, 401)
    }
    throttle.succeeded(email)
    const token = yield* store.openSession(admin.value)
    const secure = isHttps(yield* ServerConfig)
    return redirect("/admin/keys", { "set-cookie": sessionCookie(token, secure, SESSION_HOURS * 3600) })
  })

export const signOut = (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const token = cookieValue(request.cookie, SESSION_COOKIE)
    if (token !== undefined) yield* (yield* AdminStore).closeSession(token)
    const secure = isHttps(yield* ServerConfig)
    return redirect("/admin/sign-in?done=signed-out", { "set-cookie": clearedCookie(secure) })
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
    const redeemed = yield* (yield* AdminStore).redeemLink(token, yield* hashPassword(password))
    return redeemed ? redirect("/admin/sign-in?done=password-set") : linkGone()
  })
