/**
 * `parley admins create | list | remove | set-role | reset-2fa | require-2fa`: who may sign in to the admin
 * console (/admin) of an organisation, with which role (owner, admin, viewer: admin/Roles.ts), and their
 * two-factor sign-in (admin/TwoFactorStore.ts). A password comes from standard
 * input (never an argument: arguments show in `ps` and shell history); without one, a one-time link to set
 * it is printed, valid 24 hours. Each change is written to the organisation's audit log, by `cli`.
 */
import { Args, Command, Options } from "@effect/cli"
import { Crypto } from "@parley/core/internal"
import { Effect, Option } from "effect"
import {
  type Admin,
  AdminStore,
  isPlausibleEmail,
  LINK_HOURS,
  normalEmail
} from "../../admin/AdminStore.js"
import { AuditLog, CLI_ACTOR } from "../../admin/AuditLog.js"
import { type Role, ROLE_SUMMARIES, ROLES } from "../../admin/Roles.js"
import { consoleBaseUrl } from "../../admin/ConsoleUrl.js"
import { hashPassword, passwordProblem } from "../../admin/Passwords.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { fail, nowIso, requireOrg } from "../Input.js"
import { json, print, table } from "../Output.js"
import { layer as TwoFactorStoreLive, TwoFactorStore } from "../../admin/TwoFactorStore.js"

const org = Args.text({ name: "ORG" }).pipe(Args.withDescription("Organisation id (org_…)"))
const email = Options.text("email").pipe(Options.withDescription("The administrator's email, used to sign in"))

const validEmail = (value: string) => {
  const normal = normalEmail(value)
  return isPlausibleEmail(normal) ? Effect.succeed(normal) : fail(`--email "${value}" is not an email address`)
}

const roleOption = Options.choice("role", ROLES).pipe(
  Options.withDescription(`The administrator's role: ${ROLES.map((role) => `${role} (${ROLE_SUMMARIES[role]})`).join("; ")}`)
)

const audit = (orgId: string, kind: "admin.added" | "admin.removed" | "admin.role-changed", email: string, role?: Role) =>
  Effect.flatMap(AuditLog, (log) =>
    log.record({ orgId, actor: CLI_ACTOR, kind, subject: email, details: role === undefined ? [] : [["role", role]] }))

/** Standard input to its end, without the final line break a shell or `echo` adds. */
const readStdin = Effect.async<string, Error>((resume) => {
  let text = ""
  process.stdin.setEncoding("utf8")
  process.stdin.on("data", (chunk: string) => (text += chunk))
  process.stdin.once("end", () => resume(Effect.succeed(text.replace(/\r?\n$/, ""))))
  process.stdin.once("error", (error) => resume(Effect.fail(error)))
})

const create = Command.make(
  "create",
  {
    json,
    org,
    email,
    passwordStdin: Options.boolean("password-stdin").pipe(
      Options.withDescription("Read the password from standard input (at least 12 characters)")
    ),
    role: Options.optional(roleOption).pipe(
      Options.withDescription("Without it: owner for an organisation's first administrator, admin afterwards")
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const address = yield* validEmail(input.email)
      const store = yield* AdminStore
      let passwordHash: string | null = null
      if (input.passwordStdin) {
        const password = yield* Effect.catchAll(readStdin, () => fail("could not read standard input"))
        const problem = passwordProblem(password)
        if (problem !== null) return yield* fail(`The password ${problem}.`)
        passwordHash = yield* hashPassword(password)
      }
      const existing = yield* store.list(input.org)
      // Someone must be able to manage the others: the first administrator is an owner unless told otherwise.
      const role: Role = Option.getOrElse(
        input.role,
        () => (existing.some((a) => a.role === "owner") ? "admin" : "owner")
      )
      const admin: Admin = {
        id: Crypto.newId("adm"),
        orgId: input.org,
        email: address,
        passwordHash,
        role,
        createdAt: yield* nowIso
      }
      if (!(yield* store.insert(admin))) {
        return yield* fail(`${address} is already an administrator (of this or another organisation); remove it first.`)
      }
      yield* audit(input.org, "admin.added", address, role)
      if (passwordHash !== null) {
        return yield* print(input.json, { email: address, orgId: input.org, role }, () =>
          `Created administrator ${address} (${role}) of ${input.org}; they sign in at /admin.`)
      }
      const token = yield* store.issueLink(admin.id)
      const link = `${consoleBaseUrl(yield* ServerConfig)}/admin/set-password?token=${token}`
      yield* print(input.json, { email: address, role, link }, () =>
        [
          `Created administrator ${address} (${role}) of ${input.org}. Send them this link to set their password`,
          `(valid ${LINK_HOURS} hours, once):`,
          "",
          `  ${link}`
        ].join("\n"))
    })
).pipe(Command.withDescription("Add an administrator of the console (password from stdin, or a one-time link)"))

const list = Command.make("list", { json, org }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const admins = (yield* (yield* AdminStore).list(input.org)).map((a) => ({
      email: a.email,
      role: a.role,
      passwordSet: a.passwordHash !== null,
      createdAt: a.createdAt
    }))
    yield* print(input.json, { items: admins }, () =>
      admins.length === 0
        ? `No administrators for ${input.org}: add one with \`parley admins create ${input.org} --email EMAIL\`.`
        : table([
          ["EMAIL", "ROLE", "PASSWORD", "CREATED"],
          ...admins.map((a) => [a.email, a.role, a.passwordSet ? "set" : "link pending", a.createdAt])
        ]))
  })).pipe(Command.withDescription("List an organisation's administrators"))

const remove = Command.make("remove", { json, org, email }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    if (!(yield* (yield* AdminStore).remove(input.org, input.email))) {
      return yield* fail(`${normalEmail(input.email)} is not an administrator of ${input.org}.`)
    }
    yield* audit(input.org, "admin.removed", normalEmail(input.email))
    yield* print(input.json, { email: normalEmail(input.email), removed: true }, () =>
      `Removed ${normalEmail(input.email)}; their sessions ended.`)
  })).pipe(Command.withDescription("Remove an administrator and end their sessions"))

const setRole = Command.make("set-role", { json, org, email, role: roleOption }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const address = normalEmail(input.email)
    const changed = yield* (yield* AdminStore).setRole(input.org, address, input.role)
    if (changed === "missing") return yield* fail(`${address} is not an administrator of ${input.org}.`)
    if (changed === "last-owner") {
      return yield* fail(`${address} is the last owner of ${input.org}: make another administrator an owner first.`)
    }
    yield* audit(input.org, "admin.role-changed", address, input.role)
    yield* print(input.json, { email: address, role: input.role }, () =>
      `${address} is now ${input.role} of ${input.org}; it applies from their next page.`)
  })).pipe(Command.withDescription("Give an administrator another role (owner, admin or viewer)"))

/** For an administrator who lost their authenticator and their recovery codes. */
const resetTwoFactor = Command.make("reset-2fa", { json, org, email }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const address = normalEmail(input.email)
    if (!(yield* (yield* TwoFactorStore).reset(input.org, address))) {
      return yield* fail(`${address} is not an administrator of ${input.org}.`)
    }
    yield* Effect.flatMap(AuditLog, (log) =>
      log.record({ orgId: input.org, actor: CLI_ACTOR, kind: "admin.two-factor-reset", subject: address }))
    const required = yield* (yield* TwoFactorStore).isRequired(input.org)
    yield* print(input.json, { email: address, twoFactor: false, required }, () =>
      `Two-factor sign-in is off for ${address}; their sessions ended and their recovery codes no longer work. ` +
      (required
        ? "Their organisation requires it: they set it up again at their next sign-in."
        : "They sign in with their password and may set it up again on the Security page."))
  })).pipe(Command.withDescription("Turn off an administrator's two-factor sign-in (lost authenticator and recovery codes)"))

const requireTwoFactor = Command.make(
  "require-2fa",
  {
    json,
    org,
    off: Options.boolean("off").pipe(Options.withDescription("Make two-factor sign-in optional again"))
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const required = !input.off
      yield* (yield* TwoFactorStore).setRequired(input.org, required)
      yield* Effect.flatMap(AuditLog, (log) =>
        log.record({
          orgId: input.org,
          actor: CLI_ACTOR,
          kind: "admin.two-factor-policy-changed",
          details: [["require", required ? "on" : "off"]]
        }))
      yield* print(input.json, { orgId: input.org, required }, () =>
        required
          ? `Two-factor sign-in is required in ${input.org}: administrators without it were signed out and set it up at their next sign-in.`
          : `Two-factor sign-in is optional in ${input.org}.`)
    })
).pipe(Command.withDescription("Require two-factor sign-in of every administrator of the organisation (--off: optional)"))

export const admins = Command.make("admins").pipe(
  Command.withDescription("Administrators of the admin console (/admin)"),
  Command.withSubcommands([create, list, remove, setRole, resetTwoFactor, requireTwoFactor]),
  // The administrators' store and the audit log come with every command (AppLayer's ProcessLive).
  Command.provide(TwoFactorStoreLive)
)
