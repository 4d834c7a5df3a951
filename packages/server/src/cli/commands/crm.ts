/**
 * `parley crm connect | status | setup | disconnect | identity-changed | permissions | update`: the
 * organisation's connected CRM account, whose permissions every request runs
 * under. Connecting another account switches the executing account for every key.
 */
import { audited, AuditLogLive } from "../Audit.js"
import { Args, Command, Options } from "@effect/cli"
import { Crm } from "@parley/core/domain"
import { accountIdFor, connectAccount, connectionStatus, disconnectAccount, statusJson } from "../../admin/CrmConnection.js"
import { Effect, Option } from "effect"
import { Crms } from "../../crm/CrmLive.js"
import { BUILT_IN, CRM_NAMES, CRMS } from "../../crm/Registry.js"
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
    provider: Options.choice("provider", [BUILT_IN.name, ...CRM_NAMES]).pipe(
      Options.withDescription(
        `${BUILT_IN.name} (default: ${BUILT_IN.connectHint})${CRMS.map((c) => ` or ${c.name} (${c.connectHint})`).join("")}`
      ),
      Options.withDefault(BUILT_IN.name)
    ),
    switchOrg: Options.boolean("switch-org").pipe(
      Options.withDescription("With --provider <crm>: allow connecting another account of that CRM (organisation, portal) than the connected one")
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
      const crm = (yield* Crms).named(input.provider)
      if (Option.isSome(crm)) {
        const started = yield* Effect.catchTag(
          crm.value.connect(input.org, { switchOrg: input.switchOrg }),
          "CrmConnectFailed",
          (failed) => fail(failed.message)
        )
        yield* audited(input.org, "crm.consent-started", crm.value.name)
        return yield* print(input.json, { orgId: input.org, provider: crm.value.name, ...started }, () =>
          [
            `Open this link as the ${crm.value.label} user Parley should work as (valid 10 minutes, once):`,
            started.url,
            "",
            `${crm.value.vendor} then returns to ${started.redirectUri}; the current connection stays until that completes.`,
            `Check with: parley crm status ${input.org}`
          ].join("\n"))
      }
      if (Option.isNone(input.account)) {
        return yield* fail(`--account NAME is required with ${BUILT_IN.phrase} (or use ${CRM_NAMES.map((n) => `--provider ${n}`).join(" or ")})`)
      }
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
    const view = yield* connectionStatus(input.org)
    const connected = Option.getOrUndefined(view.connected)
    yield* print(input.json, statusJson(view, (yield* Crms).all), () =>
      [
        `CRM of ${input.org}: ${connected?.crm.name ?? BUILT_IN.name}, ${view.state}`,
        fields([
          ["user", connected === undefined
            ? "-"
            : `${connected.status.user.name} <${connected.status.user.email}> (${connected.status.userRef.text} ${connected.status.userRef.value})`],
          ["organisation", connected === undefined ? "-" : `${connected.status.account.name} (${connected.status.account.id})`],
          ["since", connected?.status.since ?? "-"],
          ["last error", connected === undefined || connected.status.lastError === null
            ? "-"
            : `${connected.status.lastError.code === null ? "" : `${connected.status.lastError.code}: `}${connected.status.lastError.message} (${
              connected.status.lastError.at ?? "?"
            })`]
        ])
      ].join("\n"))
  })).pipe(Command.withDescription("Show the organisation's CRM connection (provider, user, organisation, last error; never a token)"))

const setup = Command.make("setup", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const connected = yield* (yield* Crms).connectedOf(input.org)
    if (Option.isNone(connected)) {
      return yield* fail(
        `${input.org} is not connected to ${CRMS.map((c) => c.label).join(" or ")}: run \`parley crm connect ${input.org} --provider ${
          CRM_NAMES.join("|")
        }\` first`
      )
    }
    const crm = connected.value
    const report = yield* Effect.catchTag(crm.setup(input.org), "CrmError", (error) =>
      fail(`${crm.label} did not complete the set-up (${error.reason ?? "unavailable"}); check \`parley crm status ${input.org}\` and try again`))
    yield* print(input.json, report, () =>
      [
        `Created: ${report.created.length === 0 ? "nothing" : report.created.join(", ")}`,
        `Already there: ${report.existing.length}`,
        ...(report.byHand.length === 0 ? [] : [`${crm.vendor} refused; an administrator must create by hand:`, ...report.byHand.map((l) => `- ${l}`)])
      ].join("\n"))
    if (report.byHand.length > 0) return yield* fail(`${crm.label} set-up is incomplete: create the items above by hand, then run \`parley crm setup\` again.`)
  })).pipe(Command.withDescription("Create in the connected CRM what Parley needs (idempotent; see docs/crm.md)"))

const disconnect = Command.make("disconnect", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    // A connected CRM's token is revoked at the CRM first (see disconnectAccount).
    const connection = yield* disconnectAccount(input.org)
    yield* audited(input.org, "crm.disconnected", null)
    yield* show(input.json, input.org, connection)
  })).pipe(Command.withDescription("Disconnect the CRM account, revoking a connected CRM's token (requests then fail with OAUTH_REQUIRED)"))

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

/** Every CRM's settings, each as `--<flag> on|off` (the flags of all CRMs of the registry). */
const TOGGLES = CRMS.flatMap((crm) => crm.toggles.map((toggle) => ({ crm: crm.name, toggle })))

const update = Command.make(
  "update",
  {
    json,
    org,
    settings: Options.all(Object.fromEntries(TOGGLES.map(({ toggle }) => [
      toggle.flag,
      Options.choice(toggle.flag, ["on", "off"]).pipe(Options.withDescription(toggle.description), Options.optional)
    ])))
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const crms = yield* Crms
      const values = yield* Effect.forEach(TOGGLES, ({ crm, toggle }) =>
        Effect.gen(function*() {
          const running = crms.named(crm)
          if (Option.isNone(running)) return { toggle, on: false }
          const setting = running.value.toggle(toggle.flag)
          const given = input.settings[toggle.flag]
          if (given !== undefined && Option.isSome(given)) {
            yield* setting.set(input.org, given.value === "on")
            yield* audited(input.org, "crm.setting-changed", crm, [[toggle.flag, given.value]])
          }
          return { toggle, on: yield* setting.enabled(input.org) }
        }))
      yield* print(
        input.json,
        { orgId: input.org, ...Object.fromEntries(values.map(({ on, toggle }) => [toggle.flag, on ? "on" : "off"])) },
        () => values.map(({ on, toggle }) => toggle.describe(input.org, on)).join("\n")
      )
    })
).pipe(Command.withDescription(
  `Change the organisation's CRM settings (${TOGGLES.map(({ toggle }) => `--${toggle.flag} on|off`).join(", ")}); prints them`
))

export const crm = Command.make("crm").pipe(
  Command.withDescription("The organisation's connected CRM account"),
  Command.withSubcommands([connect, status, setup, disconnect, identityChanged, permissions, update]),
  // Each change is written to the organisation's audit log (../Audit.ts).
  Command.provide(AuditLogLive)
)
