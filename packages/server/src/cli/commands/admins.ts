/**
 * `parley admins create | list | remove`: who may sign in to the admin console (/admin) of an
 * organisation. A password comes from standard input (never an argument: arguments show in `ps` and shell
 * history); without one, a one-time link to set it is printed, valid 24 hours.
 */
import { Args, Command, Options } from "@effect/cli"
import { Crypto } from "@parley/core/internal"
import { Effect } from "effect"
import { type Admin, AdminStore, layer as AdminStoreLive, LINK_HOURS, normalEmail } from "../../admin/AdminStore.js"
import { consoleBaseUrl } from "../../admin/ConsoleUrl.js"
import { hashPassword, passwordProblem } from "../../admin/Passwords.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { fail, nowIso, requireOrg } from "../Input.js"
import { json, print, table } from "../Output.js"

const org = Args.text({ name: "ORG" }).pipe(Args.withDescription("Organisation id (org_…)"))
const email = Options.text("email").pipe(Options.withDescription("The administrator's email, used to sign in"))

/** A plausible email: something@something.tld, no spaces; the console only compares it, never mails it. */
const validEmail = (value: string) => {
  const normal = normalEmail(value)
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(normal) && normal.length <= 254
    ? Effect.succeed(normal)
    : fail(`--email "${value}" is not an email address`)
}

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
      const admin: Admin = { id: Crypto.newId("adm"), orgId: input.org, email: address, passwordHash, createdAt: yield* nowIso }
      if (!(yield* store.insert(admin))) {
        return yield* fail(`${address} is already an administrator (of this or another organisation); remove it first.`)
      }
      if (passwordHash !== null) {
        return yield* print(input.json, { email: address, orgId: input.org }, () =>
          `Created administrator ${address} of ${input.org}; they sign in at /admin.`)
      }
      const token = yield* store.issueLink(admin.id)
      const link = `${consoleBaseUrl(yield* ServerConfig)}/admin/set-password?token=${token}`
      yield* print(input.json, { email: address, link }, () =>
        [
          `Created administrator ${address} of ${input.org}. Send them this link to set their password`,
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
      passwordSet: a.passwordHash !== null,
      createdAt: a.createdAt
    }))
    yield* print(input.json, { items: admins }, () =>
      admins.length === 0
        ? `No administrators for ${input.org}: add one with \`parley admins create ${input.org} --email EMAIL\`.`
        : table([
          ["EMAIL", "PASSWORD", "CREATED"],
          ...admins.map((a) => [a.email, a.passwordSet ? "set" : "link pending", a.createdAt])
        ]))
  })).pipe(Command.withDescription("List an organisation's administrators"))

const remove = Command.make("remove", { json, org, email }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    if (!(yield* (yield* AdminStore).remove(input.org, input.email))) {
      return yield* fail(`${normalEmail(input.email)} is not an administrator of ${input.org}.`)
    }
    yield* print(input.json, { email: normalEmail(input.email), removed: true }, () =>
      `Removed ${normalEmail(input.email)}; their sessions ended.`)
  })).pipe(Command.withDescription("Remove an administrator and end their sessions"))

export const admins = Command.make("admins").pipe(
  Command.withDescription("Administrators of the admin console (/admin)"),
  Command.withSubcommands([create, list, remove]),
  Command.provide(AdminStoreLive)
)
