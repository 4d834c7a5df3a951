/**
 * `parley crm connect | status | setup | disconnect | identity-changed | permissions | update`: the
 * organisation's connected CRM account, whose permissions every request runs
 * under. Connecting another account switches the executing account for every key.
 */
import { audited, AuditLogLive } from "../Audit.js"
import { Args, Command, Options } from "@effect/cli"
import { Crm } from "@parley/core/domain"
import { accountIdFor, connectAccount, disconnectAccount } from "../../admin/CrmConnection.js"
import { Effect, Option } from "effect"
import * as ZohoConnect from "../../crm/zoho/ZohoConnect.js"
import { ZohoConnections } from "../../crm/zoho/ZohoConnections.js"
import { setup as zohoSetup } from "../../crm/zoho/ZohoSetup.js"
import * as ZohoWorkflows from "../../crm/zoho/ZohoWorkflows.js"
import { csv, fail, fields, MODULES, nonEmpty, oneOfEach, requireOrg } from "../Input.js"
import { json, print } from "../Output.js"

const org = Args.text({ name: "ORG" }).pipe(Args.withDescription("Organisation id (org_…)"))



const view = (orgId: string, connection: Crm.CrmConnection) =>
  connection.state === "disconnected"
    ? { orgId, state: connection.state, account: null }
    : { orgId, state: connection.state, account: connection.account }

const describe = (orgId: string, connection: Crm.CrmConnection): string => {
  if (connection.state === "disconnected") return `CRM of ${orgId}: disconnected`
  const { permissions } = connection.account
  return [
    `CRM of ${orgId}: ${connection.state === "connected" ? "connected" : "identity changed (reconnect required)"}`,
    fields([
      ["account", `${connection.account.name} (${connection.account.id})`],
      ["modules", permissions.modules.length === 0 ? "none" : permissions.modules.join(", ")],
      ["actions", permissions.actionsView],
      ["actions write", permissions.actionsWrite ? "on" : "off"],
      ["templates", permissions.templates ? "on" : "off"]
    ])
  ].join("\n")
}

const show = (asJson: boolean, orgId: string, connection: Crm.CrmConnection) =>
  print(asJson, view(orgId, connection), () => describe(orgId, connection))

const connect = Command.make(
  "connect",
  {
    json,
    org,
    provider: Options.choice("provider", ["built-in", "zoho"]).pipe(
      Options.withDescription("built-in (default: the embedded CRM, with --account) or zoho (prints Zoho's consent URL)"),
      Options.withDefault("built-in")
    ),
    switchOrg: Options.boolean("switch-org").pipe(
      Options.withDescription("With --provider zoho: allow connecting another Zoho organisation than the connected one")
    ),
    account: Options.text("account").pipe(Options.withDescription("Display name of the CRM account"), Options.optional),
    accountId: Options.text("account-id").pipe(
      Options.withDescription("CRM user id of the account (default: derived from the name)"),
      Options.optional
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      if (input.provider === "zoho") {
        const started = yield* Effect.catchTag(
          ZohoConnect.start(input.org, { switchOrg: input.switchOrg }),
          "ZohoConnectFailed",
          (failed) => fail(failed.message)
        )
        yield* audited(input.org, "crm.consent-started", "zoho")
        return yield* print(input.json, { orgId: input.org, provider: "zoho", ...started }, () =>
          [
            `Open this link as the Zoho CRM user Parley should work as (valid 10 minutes, once):`,
            started.url,
            "",
            `Zoho then returns to ${started.redirectUri}; the current connection stays until that completes.`,
            `Check with: parley crm status ${input.org}`
          ].join("\n"))
      }
      if (Option.isNone(input.account)) return yield* fail("--account NAME is required with the built-in CRM (or use --provider zoho)")
      const name = yield* nonEmpty("--account", input.account.value)
      const id = Option.isSome(input.accountId)
        ? yield* nonEmpty("--account-id", input.accountId.value)
        : accountIdFor(name)
      const connection = yield* connectAccount(input.org, name, id)
      yield* audited(input.org, "crm.connected", name, [["accountId", id]])
      yield* show(input.json, input.org, connection)
    })
).pipe(Command.withDescription("Connect (or reconnect) the CRM account every key of the organisation runs as"))

const status = Command.make("status", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const view = yield* ZohoConnect.status(input.org)
    yield* print(input.json, view, () =>
      [
        `CRM of ${input.org}: ${view.provider}, ${view.state}`,
        fields([
          ["user", view.user === null ? "-" : `${view.user.name} <${view.user.email}> (zuid ${view.user.zuid})`],
          ["organisation", view.zohoOrg === null ? "-" : `${view.zohoOrg.name} (${view.zohoOrg.id})`],
          ["since", view.since ?? "-"],
          ["last error", view.lastError === null
            ? "-"
            : `${view.lastError.code === null ? "" : `${view.lastError.code}: `}${view.lastError.message} (${view.lastError.at ?? "?"})`]
        ])
      ].join("\n"))
  })).pipe(Command.withDescription("Show the organisation's CRM connection (provider, user, organisation, last error; never a token)"))

const setup = Command.make("setup", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    if (!(yield* (yield* ZohoConnections).exists(input.org))) {
      return yield* fail(`${input.org} is not connected to Zoho CRM: run \`parley crm connect ${input.org} --provider zoho\` first`)
    }
    const report = yield* Effect.catchTag(zohoSetup(input.org), "CrmError", (error) =>
      fail(`Zoho CRM did not complete the set-up (${error.reason ?? "unavailable"}); check \`parley crm status ${input.org}\` and try again`))
    yield* print(input.json, report, () =>
      [
        `Created: ${report.created.length === 0 ? "nothing" : report.created.join(", ")}`,
        `Already there: ${report.existing.length}`,
        ...(report.byHand.length === 0 ? [] : ["Zoho refused; an administrator must create by hand:", ...report.byHand.map((l) => `- ${l}`)])
      ].join("\n"))
    if (report.byHand.length > 0) return yield* fail("Zoho CRM set-up is incomplete: create the items above by hand, then run `parley crm setup` again.")
  })).pipe(Command.withDescription("Create Parley_Templates and Parley_Messages in the connected Zoho CRM (idempotent)"))

const disconnect = Command.make("disconnect", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    // A Zoho connection's refresh token is revoked at Zoho first (see disconnectAccount).
    const connection = yield* disconnectAccount(input.org)
    yield* audited(input.org, "crm.disconnected", null)
    yield* show(input.json, input.org, connection)
  })).pipe(Command.withDescription("Disconnect the CRM account, revoking a Zoho token (requests then fail with OAUTH_REQUIRED)"))

const connectedAccount = (orgId: string) =>
  Effect.gen(function*() {
    yield* requireOrg(orgId)
    const crm = yield* Crm.Crm
    const current = yield* crm.connection(orgId)
    if (current.state === "disconnected") {
      return yield* fail(`No CRM account is connected for "${orgId}": run \`parley crm connect ${orgId} --account NAME\``)
    }
    return current
  })

const identityChanged = Command.make("identity-changed", { json, org }, (input) =>
  Effect.gen(function*() {
    const current = yield* connectedAccount(input.org)
    const crm = yield* Crm.Crm
    const connection: Crm.CrmConnection = { state: "identity_changed", account: current.account }
    yield* crm.setConnection(input.org, connection)
    yield* show(input.json, input.org, connection)
  })).pipe(
    Command.withDescription("Mark the connection's identity as changed (requests then fail with IDENTITY_CHANGED)")
  )

const parseModules = (value: string) => {
  if (value.trim().toLowerCase() === "none") return Effect.succeed([])
  const items = csv(value)
  return items.length === 0
    ? fail(`--modules is empty; give a comma-separated list of ${MODULES.join(", ")}, or none`)
    : oneOfEach("--modules", items, MODULES, "module")
}

const permissions = Command.make(
  "permissions",
  {
    json,
    org,
    modules: Options.text("modules").pipe(
      Options.withDescription("Readable modules, comma-separated (Leads,Contacts,Vendors,Deals), or none"),
      Options.optional
    ),
    actions: Options.choice("actions", ["all", "own", "none"]).pipe(
      Options.withDescription("Which actions the account sees"),
      Options.optional
    ),
    actionsWrite: Options.choice("actions-write", ["on", "off"]).pipe(
      Options.withDescription("Whether it may create and cancel actions"),
      Options.optional
    ),
    templates: Options.choice("templates", ["on", "off"]).pipe(
      Options.withDescription("Whether it may read message templates"),
      Options.optional
    )
  },
  (input) =>
    Effect.gen(function*() {
      const current = yield* connectedAccount(input.org)
      const before = current.account.permissions
      const modules = Option.isNone(input.modules) ? before.modules : yield* parseModules(input.modules.value)
      const next: Crm.CrmPermissions = {
        modules,
        actionsView: Option.getOrElse(input.actions, () => before.actionsView),
        actionsWrite: Option.match(input.actionsWrite, { onNone: () => before.actionsWrite, onSome: (v) => v === "on" }),
        templates: Option.match(input.templates, { onNone: () => before.templates, onSome: (v) => v === "on" })
      }
      const crm = yield* Crm.Crm
      const connection: Crm.CrmConnection = { ...current, account: { ...current.account, permissions: next } }
      yield* crm.setConnection(input.org, connection)
      yield* show(input.json, input.org, connection)
    })
).pipe(Command.withDescription("Set the connected CRM account's permissions"))

const update = Command.make(
  "update",
  {
    json,
    org,
    workflows: Options.choice("workflows", ["on", "off"]).pipe(
      Options.withDescription(
        "Whether Parley's writes to Zoho run the organisation's Zoho workflow rules: inbound records and the first write of a final status (default on)"
      ),
      Options.optional
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const workflows = yield* ZohoWorkflows.make
      if (Option.isSome(input.workflows)) {
        yield* workflows.set(input.org, input.workflows.value === "on")
        yield* audited(input.org, "crm.workflows-changed", null, [["workflows", input.workflows.value]])
      }
      const on = yield* workflows.enabled(input.org)
      yield* print(input.json, { orgId: input.org, workflows: on ? "on" : "off" }, () =>
        `Zoho workflow rules of ${input.org}: ${on ? "on (inbound records and final statuses are written with trigger workflow)" : "off (nothing Parley writes runs a workflow rule)"}`)
    })
).pipe(Command.withDescription("Change the organisation's Zoho settings (--workflows on|off); prints them"))

export const crm = Command.make("crm").pipe(
  Command.withDescription("The organisation's connected CRM account"),
  Command.withSubcommands([connect, status, setup, disconnect, identityChanged, permissions, update]),
  // Each change is written to the organisation's audit log (../Audit.ts).
  Command.provide(AuditLogLive)
)
