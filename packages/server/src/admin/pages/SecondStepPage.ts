/**
 * The second step of signing in (issue 33): after the right password, an administrator with two-factor on
 * types a code from their authenticator or one of their recovery codes; one whose organisation requires
 * two-factor and who has not set it up does so first. Until then they hold only a sign-in step — its own
 * cookie and table (TwoFactorStore), which no console page reads — never a session.
 */
import type { HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { type Admin, AdminStore, SESSION_HOURS } from "../AdminStore.js"
import { AuditLog } from "../AuditLog.js"
import { type ConsoleCookie, type ConsoleRequest, cookieValue, page, redirect, sessionCookie, withCookies } from "../ConsoleHttp.js"
import { DEVICE_COOKIE, deviceCookie } from "../DeviceCookies.js"
import { html } from "../Html.js"
import { type FieldErrors, layout, textField } from "../Layout.js"
import { checkCode, waitText, WRONG_CODE } from "../SecondFactor.js"
import { newRecoveryCodes, recoveryCodeHash } from "../TotpCodes.js"
import { type SignInStep, STEP_MINUTES, type StepPurpose, TwoFactorStore } from "../TwoFactorStore.js"
import { enrolmentBody, recoveryCodesBody, waiting } from "./SecurityPage.js"
import type { SignInGuards } from "./SignInPage.js"

/** `__Host-` as the session's (ConsoleHttp): no other port or subdomain can plant one. */
export const STEP_COOKIE = "__Host-parley_step"
const clearedStep: ConsoleCookie = { name: STEP_COOKIE, value: "", maxAgeSeconds: 0 }

const PAGES: Readonly<Record<StepPurpose, string>> = { code: "/admin/sign-in/code", enrol: "/admin/sign-in/enrol" }

/** After the right password: the second step to go to, or null when the password is enough. */
export const secondStepFor = (admin: Admin) =>
  Effect.gen(function*() {
    const store = yield* TwoFactorStore
    const status = yield* store.status(admin.id, admin.orgId)
    if (status.enrolledAt === null && !status.required) return null
    const purpose: StepPurpose = status.enrolledAt !== null ? "code" : "enrol"
    const token = yield* store.openStep(admin, purpose)
    return withCookies(redirect(PAGES[purpose]), [{ name: STEP_COOKIE, value: token, maxAgeSeconds: STEP_MINUTES * 60 }])
  })

const expired = withCookies(redirect("/admin/sign-in?done=step-expired"), [clearedStep])

/** The request's sign-in step for `purpose`; the answer to give instead when there is none. */
const stepOf = (request: ConsoleRequest, purpose: StepPurpose) =>
  Effect.gen(function*() {
    const token = cookieValue(request.cookie, STEP_COOKIE)
    const step = token === undefined ? Option.none<SignInStep>() : yield* (yield* TwoFactorStore).findStep(token)
    if (token === undefined || Option.isNone(step)) return { _tag: "Refused", answer: expired } as const
    if (step.value.purpose !== purpose) return { _tag: "Refused", answer: redirect(PAGES[step.value.purpose]) } as const
    return { _tag: "Step", token, step: step.value } as const
  })

const answererOf = (request: ConsoleRequest, step: SignInStep, guards: SignInGuards) => ({
  adminId: step.adminId,
  orgId: step.orgId,
  email: step.email,
  address: request.address,
  device: guards.devices.deviceOf(cookieValue(request.cookie, DEVICE_COOKIE), step.email)
})

/** The step is done: it ends, a session opens, and the client is trusted as one that signed in. */
const complete = (
  request: ConsoleRequest,
  guards: SignInGuards,
  token: string,
  step: SignInStep,
  via: string,
  answer: HttpServerResponse.HttpServerResponse
) =>
  Effect.gen(function*() {
    const twoFactor = yield* TwoFactorStore
    yield* twoFactor.closeStep(token)
    const admin = yield* (yield* AdminStore).findByEmail(step.email)
    if (Option.isNone(admin)) return expired
    yield* (yield* AuditLog).record({
      orgId: step.orgId,
      actor: step.email,
      kind: "admin.signed-in",
      details: [["second factor", via]],
      address: request.address
    })
    const cookie = sessionCookie(yield* (yield* AdminStore).openSession(admin.value), SESSION_HOURS * 3600)
    return withCookies(answer, [cookie, deviceCookie(guards.devices.issue(step.email)), clearedStep])
  })

const codeForm = (errors: FieldErrors, status = 200, alert: string | null = null) =>
  page(
    layout({
      title: "Two-factor sign-in",
      session: null,
      alert,
      body: html`<form class="card" method="post" action="/admin/sign-in/code" novalidate>
${
        textField({
          name: "code",
          label: "Code",
          errors,
          autocomplete: "one-time-code",
          required: true,
          hint: "The 6-digit code your authenticator app shows, or one of your recovery codes."
        })
      }
<button type="submit">Verify</button>
</form>
<p><a href="/admin/sign-in">Start again</a></p>`
    }),
    { status }
  )

export const codePage = (request: ConsoleRequest) =>
  Effect.map(stepOf(request, "code"), (found) => (found._tag === "Refused" ? found.answer : codeForm({})))

export const submitCode = (guards: SignInGuards) => (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const found = yield* stepOf(request, "code")
    if (found._tag === "Refused") return found.answer
    const { step, token } = found
    const secret = yield* (yield* TwoFactorStore).activeSecret(step.adminId)
    // Two-factor was reset (`parley admins reset-2fa`) while this step waited: the password alone was checked.
    if (Option.isNone(secret)) return expired
    const checked = yield* checkCode(guards.codes, answererOf(request, step, guards), request.form.get("code") ?? "", {
      secret: secret.value,
      recovery: true,
      confirming: false,
      where: "sign-in"
    })
    if (checked._tag === "Wait") {
      return waiting(codeForm({ code: waitText(checked.seconds) }, 429, "Not signed in: too many wrong codes."), checked.seconds)
    }
    if (checked._tag === "Wrong") return codeForm({ code: WRONG_CODE }, 401, "Not signed in.")
    if (checked.via === "recovery code") {
      const left = (yield* (yield* TwoFactorStore).status(step.adminId, step.orgId)).recoveryCodesLeft
      yield* (yield* AuditLog).record({
        orgId: step.orgId,
        actor: step.email,
        kind: "admin.recovery-code-used",
        details: [["left", String(left)]],
        address: request.address
      })
      // Fewer codes left: the Security page says how many, and makes new ones.
      return yield* complete(request, guards, token, step, checked.via, redirect("/admin/security"))
    }
    return yield* complete(request, guards, token, step, checked.via, redirect("/admin/keys"))
  })

const enrolForm = (step: SignInStep, secret: string, errors: FieldErrors, status: number, alert: string | null = null) =>
  Effect.map(
    enrolmentBody({ secret, email: step.email, action: "/admin/sign-in/enrol", errors, hidden: html`` }),
    (body) =>
      page(
        layout({
          title: "Set up two-factor sign-in",
          session: null,
          alert,
          notice: "Your organisation requires two-factor sign-in: set it up to continue.",
          body
        }),
        { status }
      )
  )

export const forcedEnrolPage = (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const found = yield* stepOf(request, "enrol")
    if (found._tag === "Refused") return found.answer
    return yield* enrolForm(found.step, yield* (yield* TwoFactorStore).pendingSecret(found.step.adminId), {}, 200)
  })

export const confirmForcedEnrolment = (guards: SignInGuards) => (request: ConsoleRequest) =>
  Effect.gen(function*() {
    const found = yield* stepOf(request, "enrol")
    if (found._tag === "Refused") return found.answer
    const { step, token } = found
    const store = yield* TwoFactorStore
    const secret = yield* store.pendingSecret(step.adminId)
    const checked = yield* checkCode(guards.codes, answererOf(request, step, guards), request.form.get("code") ?? "", {
      secret,
      recovery: false,
      confirming: true,
      where: "required set-up"
    })
    const alert = "Two-factor sign-in was not turned on: see below."
    if (checked._tag === "Wait") {
      return waiting(yield* enrolForm(step, secret, { code: waitText(checked.seconds) }, 429, alert), checked.seconds)
    }
    if (checked._tag === "Wrong" || checked.step === null) return yield* enrolForm(step, secret, { code: WRONG_CODE }, 400, alert)
    const codes = newRecoveryCodes()
    if (!(yield* store.activate(step.adminId, checked.step, codes.map(recoveryCodeHash)))) return expired
    yield* (yield* AuditLog).record({
      orgId: step.orgId,
      actor: step.email,
      kind: "admin.two-factor-enrolled",
      address: request.address
    })
    return yield* complete(request, guards, token, step, "authenticator (set up now)",
      page(layout({
        title: "Two-factor sign-in is on",
        session: null,
        body: recoveryCodesBody(codes, html`<p><a href="/admin/keys">Continue to the console</a></p>`)
      })))
  })
