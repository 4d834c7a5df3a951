/**
 * Security (issue 33): each administrator's own two-factor sign-in — set up by scanning a QR code (or typing
 * the secret) and confirming with a code, ten recovery codes shown once, regenerated or turned off with a
 * current code — their own password, and, for owners, the organisation's policy requiring two-factor of
 * every administrator. Every role may change their own sign-in (a viewer too); only owners the policy.
 */
import { HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { AdminStore, SESSION_HOURS, type Session } from "../AdminStore.js"
import { type ConsoleRequest, page, redirect, sessionCookie, withCookies } from "../ConsoleHttp.js"
import { AuditLog } from "../AuditLog.js"
import { html, type Html } from "../Html.js"
import { csrfField, type FieldErrors, layout, textField } from "../Layout.js"
import { hashPassword, inHashingTurn, MIN_PASSWORD_LENGTH, passwordProblem, verifyPassword } from "../Passwords.js"
import { qrSvg } from "../QrCode.js"
import { mayManageAdmins } from "../Roles.js"
import { checkCode, waitText, WRONG_CODE } from "../SecondFactor.js"
import type { SignInGuards } from "./SignInPage.js"
import { groupedSecret, newRecoveryCodes, otpauthUri, RECOVERY_CODE_COUNT, recoveryCodeHash, TOTP_DIGITS } from "../TotpCodes.js"
import { TwoFactorStore } from "../TwoFactorStore.js"

const NOTICES: Readonly<Record<string, string>> = {
  disabled: "Two-factor sign-in is off for you.",
  password: "Your password is changed. Your other sessions were ended.",
  required: "Two-factor sign-in is now required for every administrator of this organisation.",
  optional: "Two-factor sign-in is now optional in this organisation."
}

const codeField = (name: string, label: string, errors: FieldErrors, hint: string) =>
  textField({ name, label, errors, autocomplete: "one-time-code", required: true, hint })

/** The set-up form: the QR code, the secret to type instead, and the code that confirms it. */
export const enrolmentBody = (options: {
  readonly secret: string
  readonly email: string
  readonly action: string
  readonly errors: FieldErrors
  readonly hidden: Html
}): Effect.Effect<Html> =>
  Effect.map(qrSvg(otpauthUri(options.secret, options.email), "QR code to scan with your authenticator app"), (qr) =>
    html`<section class="card" aria-labelledby="enrol-heading">
<h2 id="enrol-heading">1. Add Parley to your authenticator app</h2>
<p>Scan this QR code with an authenticator app (any app for time-based codes).</p>
<div class="qr">${qr}</div>
<p>Or type this key into the app (time-based, ${TOTP_DIGITS} digits):</p>
<div class="secret"><code id="totp-secret">${groupedSecret(options.secret)}</code></div>
</section>
<form class="card" method="post" action="${options.action}" novalidate>
<h2>2. Type the code the app shows</h2>
${options.hidden}
${codeField("code", "Code from the app", options.errors, `${TOTP_DIGITS} digits; a new one every 30 seconds.`)}
<button type="submit">Turn on two-factor sign-in</button>
</form>`)

/** The recovery codes, shown once, in the answer to the form that made them. */
export const recoveryCodesBody = (codes: ReadonlyArray<string>, next: Html): Html =>
  html`<div class="card">
<p class="alert" role="alert"><strong>Save these ${codes.length} recovery codes now: they will not be shown again.</strong> Each signs you in once if you lose your authenticator.</p>
<ol id="recovery-codes" class="recovery-codes">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ol>
<button type="button" data-copy="recovery-codes">Copy codes</button><span id="recovery-codes-status" role="status"></span>
</div>
${next}`

const view = (
  session: Session,
  options: { readonly notice?: string | undefined; readonly alert?: string | null; readonly errors?: FieldErrors; readonly status?: number }
) =>
  Effect.gen(function*() {
    const status = yield* (yield* TwoFactorStore).status(session.adminId, session.orgId)
    const errors = options.errors ?? {}
    const owner = mayManageAdmins(session.role)
    const twoFactor = status.enrolledAt === null
      ? html`<p>Two-factor sign-in is <strong>off</strong> for you.${
        status.required ? " Your organisation requires it." : ""
      } With it, signing in asks for a code from an app on your phone as well as your password.</p>
<p><a class="button" href="/admin/security/enrol">Set up two-factor sign-in</a></p>`
      : html`<p>Two-factor sign-in is <strong>on</strong> for you (since ${status.enrolledAt}). Recovery codes left: ${status.recoveryCodesLeft} of ${RECOVERY_CODE_COUNT}.</p>
<form method="post" action="/admin/security/recovery-codes" novalidate>
<h3>New recovery codes</h3>
${csrfField(session)}
${codeField("regenerate-code", "Code from the app, for new recovery codes", errors, "Your earlier recovery codes stop working.")}
<button type="submit">Make new recovery codes</button>
</form>
${
        status.required
          ? html`<p>Your organisation requires two-factor sign-in, so it cannot be turned off.</p>`
          : html`<form method="post" action="/admin/security/disable" novalidate>
<h3>Turn off</h3>
${csrfField(session)}
${codeField("disable-code", "Code from the app, to turn off", errors, "Signing in will ask for your password only.")}
<button type="submit" class="danger">Turn off two-factor sign-in</button>
</form>`
      }`
    return page(
      layout({
        title: "Security",
        session,
        current: "/admin/security",
        notice: options.notice,
        alert: options.alert,
        body: html`<section class="card" aria-labelledby="two-factor-heading">
<h2 id="two-factor-heading">Two-factor sign-in</h2>
${twoFactor}
</section>
<form class="card" method="post" action="/admin/security/password" novalidate>
<h2>Change your password</h2>
${csrfField(session)}
${
          textField({
            name: "current-password",
            label: "Current password",
            type: "password",
            errors,
            autocomplete: "current-password",
            required: true
          })
        }
${
          textField({
            name: "new-password",
            label: "New password",
            type: "password",
            errors,
            autocomplete: "new-password",
            required: true,
            hint: `At least ${MIN_PASSWORD_LENGTH} characters. Your other sessions end.`
          })
        }
<button type="submit">Change password</button>
</form>
<section class="card" aria-labelledby="policy-heading">
<h2 id="policy-heading">Organisation policy</h2>
<p>Two-factor sign-in is <strong>${status.required ? "required" : "optional"}</strong> for the administrators of this organisation.</p>
${
          owner
            ? html`<form method="post" action="/admin/security/policy">
${csrfField(session)}<input type="hidden" name="require" value="${status.required ? "off" : "on"}">
<button type="submit"${status.required ? html` class="danger"` : ""}>${
              status.required ? "Make two-factor sign-in optional" : "Require two-factor sign-in for everyone"
            }</button>
</form>
<p class="hint">${
              status.required
                ? "Anyone who turned it on keeps it."
                : "Administrators without it are signed out and set it up at their next sign-in. Set it up for yourself first."
            }</p>`
            : html`<p>Only an owner of this organisation changes this.</p>`
        }
</section>`
      }),
      { status: options.status ?? 200 }
    )
  })

export const securityPage = (request: ConsoleRequest, session: Session) =>
  view(session, { notice: NOTICES[request.query.get("done") ?? ""] })

/** A signed-in administrator's wrong codes count per address and account: no device of theirs is trusted for codes. */
const answerer = (request: ConsoleRequest, session: Session) => ({
  adminId: session.adminId,
  orgId: session.orgId,
  email: session.email,
  address: request.address,
  device: null
})

const enrolView = (session: Session, secret: string, errors: FieldErrors, status: number, alert?: string) =>
  Effect.map(
    enrolmentBody({ secret, email: session.email, action: "/admin/security/enrol", errors, hidden: csrfField(session) }),
    (body) => page(layout({ title: "Set up two-factor sign-in", session, current: "/admin/security", alert, body }), { status })
  )

export const enrolPage = (_request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const store = yield* TwoFactorStore
    const status = yield* store.status(session.adminId, session.orgId)
    if (status.enrolledAt !== null) return redirect("/admin/security")
    return yield* enrolView(session, yield* store.pendingSecret(session.adminId), {}, 200)
  })

const codesPage = (session: Session, title: string, codes: ReadonlyArray<string>) =>
  page(layout({
    title,
    session,
    current: "/admin/security",
    body: recoveryCodesBody(codes, html`<p><a href="/admin/security">Back to Security</a></p>`)
  }))

/** A refusal that asks to wait carries Retry-After, as the sign-in's does. */
export const waiting = (answer: HttpServerResponse.HttpServerResponse, seconds: number) =>
  HttpServerResponse.setHeader(answer, "retry-after", String(seconds))

export const confirmEnrolment = (guards: SignInGuards) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const store = yield* TwoFactorStore
    // On already: a stolen session must not swap in its own authenticator without a current code.
    // (Not a redirect: an answer below 400 would be audited as set up.)
    const onAlready = view(session, { alert: "Two-factor sign-in is on already: turn it off first to use another app.", status: 409 })
    if ((yield* store.status(session.adminId, session.orgId)).enrolledAt !== null) return yield* onAlready
    const secret = yield* store.pendingSecret(session.adminId)
    const checked = yield* checkCode(guards.codes, answerer(request, session), request.form.get("code") ?? "", {
      secret,
      recovery: false,
      confirming: true,
      where: "set-up"
    })
    const alert = "Two-factor sign-in was not turned on: see below."
    if (checked._tag === "Wait") {
      return waiting(yield* enrolView(session, secret, { code: waitText(checked.seconds) }, 429, alert), checked.seconds)
    }
    if (checked._tag === "Wrong" || checked.step === null) return yield* enrolView(session, secret, { code: WRONG_CODE }, 400, alert)
    const codes = newRecoveryCodes()
    if (!(yield* store.activate(session.adminId, checked.step, codes.map(recoveryCodeHash)))) return yield* onAlready
    return codesPage(session, "Two-factor sign-in is on", codes)
  })

/** Checks the field's code against the administrator's confirmed secret: the answer, or the page to show instead. */
const withCurrentCode = (
  guards: SignInGuards,
  request: ConsoleRequest,
  session: Session,
  field: string,
  where: string,
  then: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, TwoFactorStore | AdminStore | AuditLog>
) =>
  Effect.gen(function*() {
    const secret = yield* (yield* TwoFactorStore).activeSecret(session.adminId)
    if (Option.isNone(secret)) return redirect("/admin/security")
    const checked = yield* checkCode(guards.codes, answerer(request, session), request.form.get(field) ?? "", {
      secret: secret.value,
      recovery: false,
      confirming: false,
      where
    })
    const alert = "Nothing was changed: see below."
    if (checked._tag === "Wait") {
      return waiting(yield* view(session, { alert, errors: { [field]: waitText(checked.seconds) }, status: 429 }), checked.seconds)
    }
    if (checked._tag === "Wrong") return yield* view(session, { alert, errors: { [field]: WRONG_CODE }, status: 400 })
    return yield* then
  })

export const regenerateCodes = (guards: SignInGuards) => (request: ConsoleRequest, session: Session) =>
  withCurrentCode(guards, request, session, "regenerate-code", "new recovery codes", Effect.gen(function*() {
    const codes = newRecoveryCodes()
    yield* (yield* TwoFactorStore).replaceRecoveryCodes(session.adminId, codes.map(recoveryCodeHash))
    return codesPage(session, "New recovery codes", codes)
  }))

export const disableTwoFactor = (guards: SignInGuards) => (request: ConsoleRequest, session: Session) =>
  withCurrentCode(guards, request, session, "disable-code", "turn off", Effect.gen(function*() {
    if (!(yield* (yield* TwoFactorStore).disable(session.adminId, session.orgId))) {
      return yield* view(session, { alert: "Your organisation requires two-factor sign-in: it stays on.", status: 409 })
    }
    return redirect("/admin/security?done=disabled")
  }))

export const changePassword = (guards: SignInGuards) => (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const current = request.form.get("current-password") ?? ""
    const next = request.form.get("new-password") ?? ""
    const alert = "Your password was not changed: see below."
    const problem = passwordProblem(next)
    if (problem !== null) return yield* view(session, { alert, errors: { "new-password": `The new password ${problem}.` }, status: 400 })
    const now = yield* Clock.currentTimeMillis
    // Guessing the current password from a stolen session is slowed down as at sign-in.
    const admission = guards.throttle.arrive({ email: session.email, address: request.address, device: null }, now)
    if (admission._tag === "Wait") {
      const errors = { "current-password": `Too many wrong passwords: try again in ${admission.seconds} seconds.` }
      return waiting(yield* view(session, { alert, errors, status: 429 }), admission.seconds)
    }
    const store = yield* AdminStore
    const hashed = yield* inHashingTurn(Effect.gen(function*() {
      const admin = yield* store.findByEmail(session.email)
      if (Option.isNone(admin) || admin.value.passwordHash === null) return null
      if (!(yield* verifyPassword(current, admin.value.passwordHash))) return null
      return { admin: admin.value, hash: yield* hashPassword(next) }
    })).pipe(Effect.either)
    if (hashed._tag === "Left") {
      return yield* view(session, { alert, errors: { "new-password": "The server is busy: try again in a moment." }, status: 503 })
    }
    if (hashed.right === null) {
      yield* (yield* AuditLog).record({
        orgId: session.orgId,
        actor: session.email,
        kind: "admin.password-change-failed",
        address: request.address
      })
      return yield* view(session, { alert, errors: { "current-password": "The current password is wrong." }, status: 401 })
    }
    admission.succeeded()
    // A new password ends every session (AdminStore.setPassword); this one goes on in a new session.
    yield* store.setPassword(session.adminId, hashed.right.hash)
    const token = yield* store.openSession(hashed.right.admin)
    return withCookies(redirect("/admin/security?done=password"), [sessionCookie(token, SESSION_HOURS * 3600)])
  })

export const setPolicy = (request: ConsoleRequest, session: Session) =>
  Effect.gen(function*() {
    const store = yield* TwoFactorStore
    const require = request.form.get("require") === "on"
    if (require && (yield* store.status(session.adminId, session.orgId)).enrolledAt === null) {
      return yield* view(session, {
        alert: "Set up two-factor sign-in for yourself before requiring it of everyone.",
        status: 409
      })
    }
    yield* store.setRequired(session.orgId, require)
    return redirect(`/admin/security?done=${require ? "required" : "optional"}`)
  })
