/**
 * The admin console, mounted under /admin as plain routes of the one request pipeline (so it gets the
 * same request ids, body limits and logs as the API, and the API's routes are matched before any of these:
 * an API request never looks at them). Each page of a signed-in administrator runs with their session,
 * scoped to their organisation; every POST but sign-in's must carry the session's CSRF token and come from
 * this origin. Failures the administrator did not cause answer a bare 500 page, logged without details.
 */
import { Crms } from "../crm/CrmLive.js"
import { CRMS } from "../crm/Registry.js"
import { KeyUsage } from "../store/KeyUsage.js"
import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import {
  type Actions,
  type ActionStore,
  type ApiKeys,
  type ApiKeyStore,
  type Consent,
  type Conversations,
  type Crm,
  Crypto,
  type OptOuts,
  type Organisations,
  type RecordLists
} from "@parley/core/internal"
import { Cause, Effect, Layer, Option } from "effect"
import type { ServerConfig } from "../config/ServerConfig.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
import { describeCause } from "../http/ErrorResponses.js"
import type { ProviderAccounts } from "../store/SqlProviderAccounts.js"
import type { Webhooks } from "../store/SqlWebhooks.js"
import { AdminStore, layer as AdminStoreLive, type Session } from "./AdminStore.js"
import { CONSOLE_CSS, CONSOLE_JS } from "./Assets.js"
import { asset, type ConsoleRequest, cookieValue, page, readRequest, redirect, sameOrigin, SESSION_COOKIE } from "./ConsoleHttp.js"
import { html } from "./Html.js"
import { layout } from "./Layout.js"
import { activityPage, conversationPage, recordPage } from "./pages/ActivityPage.js"
import { confirmDisconnectCrm, connectCrm, crmOverview, disconnectCrm, setCrmToggle, startExternalCrm } from "./pages/CrmPage.js"
import {
  addWebhook,
  confirmDeleteWebhook,
  deleteWebhook,
  disableWebhook,
  enableWebhook,
  endpointDeliveries,
  eventDetail,
  eventsOverview,
  resendEvent,
  rotateWebhook,
  testEvent
} from "./pages/EventsPage.js"
import {
  confirmRevokePage,
  createdKeyPage,
  createKey,
  keyDetailPage,
  keysPage,
  newKeyPage,
  renameKeyAction,
  revokeKey,
  rollKeyAction
} from "./pages/Keys.js"
import { ShownOnce } from "./ShownOnce.js"
import { addOptOut, confirmRemoveOptOut, optOutsPage, removeOptOut } from "./pages/OptOutsPage.js"
import { clearProvider, confirmClearProvider, providersPage, setProvider } from "./pages/ProvidersPage.js"
import { saveSendingRules, sendingRulesPage } from "./pages/SendingRulesPage.js"
import { setPassword, setPasswordPage, signIn, signInPage, signOut } from "./pages/SignInPage.js"
import { SignInThrottle } from "./SignInThrottle.js"
import { DeviceCookies } from "./DeviceCookies.js"
import { AuditLog, layer as AuditLogLive } from "./AuditLog.js"
import { consoleEntry } from "./ConsoleAudit.js"
import { mayChange, mayManageAdmins } from "./Roles.js"
import { addAdmin, adminsPage, changeRole, confirmRemoveAdmin, removeAdmin } from "./pages/AdminsPage.js"
import { auditPage } from "./pages/AuditPage.js"
import { codePage, confirmForcedEnrolment, forcedEnrolPage, submitCode } from "./pages/SecondStepPage.js"
import {
  changePassword,
  confirmEnrolment,
  disableTwoFactor,
  enrolPage,
  regenerateCodes,
  securityPage,
  setPolicy
} from "./pages/SecurityPage.js"
import { layer as TwoFactorStoreLive, TwoFactorStore } from "./TwoFactorStore.js"
import type { SecretBox } from "../store/SecretBox.js"
import { usagePage } from "./pages/UsagePage.js"

/** What the console's pages read and change: the same services and stores as the API and the CLI. */
export type ConsoleServices =
  | AdminStore
  | ApiKeyStore.ApiKeyStore
  | ApiKeys.ApiKeys
  | Crm.Crm
  | Organisations.Organisations
  | RecordLists.RecordLists
  | Actions.Actions
  | Conversations.Conversations
  | Webhooks
  | ProviderAccounts
  | SqlClient.SqlClient
  | ServerConfig
  // The registry's CRMs: connecting one, its status and settings; disconnecting revokes its token.
  | Crms
  // Developer access shows each key's last use.
  | KeyUsage
  // The Opt-outs page: the list and its history, changed through the core's Consent.
  | OptOuts.OptOuts
  | Consent.Consent
  // Every change made in the console is recorded (ConsoleAudit), and the Audit log page reads it.
  | AuditLog
  // The Activity search reads the actions as the organisation's administrator (no key's restrictions).
  | ActionStore.ActionStore
  // Two-factor sign-in: the secrets are sealed (TwoFactorStore), the Security page and the second step.
  | TwoFactorStore
  | SecretBox

type Answer = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, ConsoleServices>
type SignedInHandler = (request: ConsoleRequest, session: Session) => Answer
type OpenHandler = (request: ConsoleRequest) => Answer

const forbidden = (session: Session | null) =>
  page(
    layout({
      title: "Refused",
      session,
      body: html`<p>This form expired or did not come from this console. Go back, reload the page and try again.</p>`
    }),
    { status: 403 }
  )

/** A signed-in administrator whose role does not allow the change: the console's own page, never the API's JSON. */
const notAllowed = (session: Session, what: string) =>
  page(
    layout({
      title: "Not allowed",
      session,
      body: html`<p>Your role (${session.role}) does not allow ${what}. Nothing was changed. Ask an owner of this organisation if you need it.</p>`
    }),
    { status: 403 }
  )

const failed = page(
  layout({ title: "Something went wrong", session: null, body: html`<p>Something went wrong on our side; try again.</p>` }),
  { status: 500 }
)

export const consoleRoutes: Effect.Effect<
  ReadonlyArray<PlainRoute>,
  never,
  Exclude<ConsoleServices, AdminStore | AuditLog | TwoFactorStore>
> = Effect.gen(
  function*() {
    const context = yield* Effect.context<ConsoleServices>()
    const guards = { throttle: new SignInThrottle(), codes: new SignInThrottle(), devices: new DeviceCookies() }
    // New keys' secrets between the form and the page that shows them once (POST-redirect-GET).
    const shown = new ShownOnce()

    const run = (
      answer: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, ConsoleServices | HttpServerRequest.HttpServerRequest>
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
      answer.pipe(
        Effect.catchAllCause((cause) =>
          Effect.as(
            Effect.annotateLogs(Effect.logError("console failure"), { cause: describeCause(Cause.squash(cause)) }),
            failed
          )
        ),
        Effect.provide(context)
      )

    const open = (handler: OpenHandler, options: { readonly post: boolean }) =>
      run(Effect.flatMap(readRequest, (request) =>
        options.post && !sameOrigin(request) ? Effect.succeed(forbidden(null)) : handler(request)))

    /**
     * `path` (posts only) is what the audit log records the change as; `owners` limits the route to owners.
     * A viewer's post is refused before its handler runs, whatever the form.
     */
    const signedIn = (
      handler: SignedInHandler,
      options: { readonly post: boolean; readonly path?: string; readonly owners?: boolean; readonly viewers?: boolean }
    ) =>
      run(Effect.gen(function*() {
        const request = yield* readRequest
        const token = cookieValue(request.cookie, SESSION_COOKIE)
        const session = token === undefined ? Option.none() : yield* (yield* AdminStore).findSession(token)
        if (Option.isNone(session)) return redirect("/admin/sign-in")
        if (options.post) {
          const sent = request.form.get("csrf") ?? ""
          if (!sameOrigin(request) || !Crypto.constantTimeEqual(sent, session.value.csrfToken)) {
            return forbidden(session.value)
          }
          if (options.viewers !== true && !mayChange(session.value.role)) return notAllowed(session.value, "changes")
        }
        if (options.owners === true && !mayManageAdmins(session.value.role)) {
          return notAllowed(session.value, "managing administrators")
        }
        const answer = yield* handler(request, session.value)
        if (options.post && options.path !== undefined && answer.status < 400) {
          // The change is made: a failure to record it is logged loudly, not answered as a failure (which
          // would invite the administrator to make the change a second time).
          yield* (yield* AuditLog).record(consoleEntry(options.path, request, session.value)).pipe(
            Effect.catchAll((error) => Effect.logError(`audit log write failed: ${error.operation}`))
          )
        }
        return answer
      }))

    type Handler = Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
    const get = (path: string, handler: Handler): PlainRoute => ({ method: "GET", path, handler })
    const post = (path: string, handler: Handler): PlainRoute => ({ method: "POST", path, body: "form", handler })
    const page_ = (path: string, handler: SignedInHandler) => get(path, signedIn(handler, { post: false }))
    const action = (path: string, handler: SignedInHandler) => post(path, signedIn(handler, { post: true, path }))
    const ownerAction = (path: string, handler: SignedInHandler) =>
      post(path, signedIn(handler, { post: true, path, owners: true }))
    // One's own sign-in (two-factor, password): every role, a viewer too.
    const ownAction = (path: string, handler: SignedInHandler) =>
      post(path, signedIn(handler, { post: true, path, viewers: true }))

    return [
      get("/admin", Effect.succeed(redirect("/admin/keys"))),
      get("/admin/assets/console.css", Effect.succeed(asset(CONSOLE_CSS, "text/css; charset=utf-8"))),
      get("/admin/assets/console.js", Effect.succeed(asset(CONSOLE_JS, "text/javascript; charset=utf-8"))),
      get("/admin/sign-in", open(signInPage, { post: false })),
      post("/admin/sign-in", open(signIn(guards), { post: true })),
      get("/admin/set-password", open(setPasswordPage, { post: false })),
      post("/admin/set-password", open(setPassword, { post: true })),
      get("/admin/sign-in/code", open(codePage, { post: false })),
      post("/admin/sign-in/code", open(submitCode(guards), { post: true })),
      get("/admin/sign-in/enrol", open(forcedEnrolPage, { post: false })),
      post("/admin/sign-in/enrol", open(confirmForcedEnrolment(guards), { post: true })),
      post("/admin/sign-out", signedIn((request) => signOut(request), { post: true, path: "/admin/sign-out", viewers: true })),
      page_("/admin/keys", keysPage),
      page_("/admin/keys/new", newKeyPage),
      action("/admin/keys/new", createKey(shown)),
      page_("/admin/keys/created", createdKeyPage(shown)),
      page_("/admin/keys/key", keyDetailPage),
      action("/admin/keys/edit", renameKeyAction),
      action("/admin/keys/roll", rollKeyAction(shown)),
      page_("/admin/keys/revoke", confirmRevokePage),
      action("/admin/keys/revoke", revokeKey),
      page_("/admin/crm", crmOverview),
      action("/admin/crm/connect", connectCrm),
      page_("/admin/crm/disconnect", confirmDisconnectCrm),
      action("/admin/crm/disconnect", disconnectCrm),
      // Each CRM of the registry: "Connect <CRM>", and a button per setting.
      ...CRMS.map((crm) => action(`/admin/crm/${crm.name}`, startExternalCrm(crm.name))),
      ...CRMS.flatMap((crm) => crm.toggles.map((t) => action(`/admin/crm/${t.flag}`, setCrmToggle(crm.name, t.flag)))),
      page_("/admin/providers", providersPage),
      action("/admin/providers/set", setProvider),
      page_("/admin/providers/clear", confirmClearProvider),
      action("/admin/providers/clear", clearProvider),
      page_("/admin/rules", sendingRulesPage),
      action("/admin/rules", saveSendingRules),
      page_("/admin/events", eventsOverview),
      action("/admin/events/add", addWebhook),
      action("/admin/events/rotate", rotateWebhook),
      action("/admin/events/disable", disableWebhook),
      action("/admin/events/enable", enableWebhook),
      page_("/admin/events/delete", confirmDeleteWebhook),
      action("/admin/events/delete", deleteWebhook),
      page_("/admin/opt-outs", optOutsPage),
      action("/admin/opt-outs/add", addOptOut),
      page_("/admin/opt-outs/remove", confirmRemoveOptOut),
      action("/admin/opt-outs/remove", removeOptOut),
      page_("/admin/activity", activityPage),
      page_("/admin/activity/record", recordPage),
      page_("/admin/activity/conversation", conversationPage),
      page_("/admin/admins", adminsPage),
      ownerAction("/admin/admins/add", addAdmin),
      ownerAction("/admin/admins/role", changeRole),
      get("/admin/admins/remove", signedIn(confirmRemoveAdmin, { post: false, owners: true })),
      ownerAction("/admin/admins/remove", removeAdmin),
      page_("/admin/audit", auditPage),
      page_("/admin/usage", usagePage),
      page_("/admin/events/deliveries", endpointDeliveries),
      page_("/admin/events/event", eventDetail),
      action("/admin/events/resend", resendEvent),
      action("/admin/events/test", testEvent),
      page_("/admin/security", securityPage),
      page_("/admin/security/enrol", enrolPage),
      ownAction("/admin/security/enrol", confirmEnrolment(guards)),
      ownAction("/admin/security/recovery-codes", regenerateCodes(guards)),
      ownAction("/admin/security/disable", disableTwoFactor(guards)),
      ownAction("/admin/security/password", changePassword(guards)),
      ownerAction("/admin/security/policy", setPolicy)
    ]
  }
).pipe(Effect.provide(Layer.mergeAll(AdminStoreLive, AuditLogLive, TwoFactorStoreLive)))
