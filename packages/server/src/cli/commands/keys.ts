/**
 * `parley keys create | list | revoke`: the organisation's API keys. The token
 * is printed once, at creation; only its hash is stored. Revocation is read on
 * every request, so a running server refuses the key on its next request.
 */
import { audited } from "../Audit.js"
import { Args, Command, Options } from "@effect/cli"
import { ALL_SCOPES, ApiKeyStore } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import { issueKey, type KeyField, type KeyRefused } from "../../admin/KeyIssuing.js"
import { csv, fail, fields, nowIso, orNone, requireOrg } from "../Input.js"
import { json, print, table } from "../Output.js"

const orgOption = Options.text("org").pipe(Options.withDescription("Organisation id (org_…)"))

const status = (key: ApiKeyStore.ApiKeyRow, now: number): "active" | "revoked" | "expired" =>
  key.revokedAt !== null ? "revoked" : key.expiresAt !== null && Date.parse(key.expiresAt) <= now ? "expired" : "active"

/** What listings show of a key: never the token or its hash. */
const summary = (key: ApiKeyStore.ApiKeyRow, now: number) => ({
  id: key.id,
  orgId: key.orgId,
  name: key.name,
  mode: key.mode,
  prefix: key.prefix,
  status: status(key, now),
  scopes: key.scopes,
  numbers: key.numberSids,
  bots: key.botIds,
  createdAt: key.createdAt,
  expiresAt: key.expiresAt,
  revokedAt: key.revokedAt
})

const FLAGS: Readonly<Record<KeyField, string>> = {
  crm: "",
  name: "--name",
  scopes: "--scopes",
  numbers: "--numbers",
  bots: "--bots",
  expiresAt: "--expires-at"
}

const refusalLine = (orgId: string, refusal: KeyRefused): string =>
  refusal.field === "crm"
    ? `${orgId}: ${refusal.message} Use \`parley crm connect ${orgId} --account NAME\`, then create the key.`
    : refusal.message.startsWith("\"")
    ? `${FLAGS[refusal.field]} ${refusal.message}` // `--expires-at "next tuesday" must be…`
    : `${FLAGS[refusal.field]}: ${refusal.message}`

const all = (items: ReadonlyArray<string>) => (items.length === 0 ? "all" : items.join(", "))

const create = Command.make(
  "create",
  {
    json,
    org: orgOption,
    name: Options.text("name").pipe(Options.withDescription("A name to tell the key apart")),
    scopes: Options.text("scopes").pipe(
      Options.withDescription(`Comma-separated scopes (${ALL_SCOPES.join(", ")}), or all`)
    ),
    mode: Options.choice("mode", ["test", "live"]).pipe(
      Options.withDescription("test keys simulate creation and cancellation; live keys act")
    ),
    numbers: Options.text("numbers").pipe(
      Options.withDescription("Restrict the key to these number sids (comma-separated; default all)"),
      Options.optional
    ),
    bots: Options.text("bots").pipe(
      Options.withDescription("Restrict the key to these bot ids (comma-separated; default all)"),
      Options.optional
    ),
    expiresAt: Options.text("expires-at").pipe(
      Options.withDescription("ISO 8601 expiry with an offset, such as 2030-01-31T00:00:00Z"),
      Options.optional
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const scopeItems = csv(input.scopes)
      if (scopeItems.length === 0) {
        return yield* fail(`--scopes is empty; give a comma-separated list of ${ALL_SCOPES.join(", ")}, or all`)
      }
      // The rules are the console's too (KeyIssuing); a refusal is reported against the flag it is about.
      const { key, token } = yield* issueKey({
        orgId: input.org,
        name: input.name,
        mode: input.mode,
        scopes: scopeItems.length === 1 && scopeItems[0] === "all" ? ALL_SCOPES : scopeItems,
        numberSids: Option.isNone(input.numbers) ? [] : csv(input.numbers.value),
        botIds: Option.isNone(input.bots) ? [] : csv(input.bots.value),
        expiresAt: Option.getOrNull(input.expiresAt)
      }).pipe(Effect.catchTag("KeyRefused", (refusal) => fail(refusalLine(input.org, refusal))))
      const created = {
        id: key.id,
        key: token,
        orgId: key.orgId,
        name: key.name,
        mode: key.mode,
        scopes: key.scopes,
        numbers: key.numberSids,
        bots: key.botIds,
        expiresAt: key.expiresAt
      }
      yield* audited(key.orgId, "key.created", key.name, [
        ["id", key.id],
        ["mode", key.mode],
        ["scopes", key.scopes.join(",")]
      ])
      yield* print(input.json, created, () =>
        [
          `Created ${key.mode} key ${key.id} (${key.name}) for ${key.orgId}`,
          "",
          `  ${token}`,
          "",
          "This is the only time the key is shown: store it on your server, never in frontend code.",
          fields([
            ["scopes", key.scopes.join(", ")],
            ["numbers", all(key.numberSids)],
            ["bots", all(key.botIds)],
            ["expires", orNone(key.expiresAt, "never")]
          ])
        ].join("\n"))
    })
).pipe(Command.withDescription("Create an API key and print it once"))

const list = Command.make("list", { json, org: orgOption }, (input) =>
  Effect.gen(function*() {
    yield* requireOrg(input.org)
    const store = yield* ApiKeyStore.ApiKeyStore
    const now = yield* Clock.currentTimeMillis
    const keys = (yield* store.list(input.org)).map((k) => summary(k, now))
    yield* print(input.json, { items: keys }, () =>
      keys.length === 0
        ? `No API keys for ${input.org}: create one with \`parley keys create --org ${input.org} …\`.`
        : table([
          ["ID", "NAME", "MODE", "PREFIX", "STATUS", "SCOPES", "NUMBERS", "BOTS", "EXPIRES"],
          ...keys.map((k) => [
            k.id,
            k.name,
            k.mode,
            `${k.prefix}…`,
            k.status,
            k.scopes.join(","),
            all(k.numbers),
            all(k.bots),
            orNone(k.expiresAt, "never")
          ])
        ]))
  })).pipe(Command.withDescription("List an organisation's API keys (never the keys themselves)"))

const revoke = Command.make(
  "revoke",
  { json, keyId: Args.text({ name: "KEY_ID" }).pipe(Args.withDescription("API key id (key_…)")) },
  (input) =>
    Effect.gen(function*() {
      const store = yield* ApiKeyStore.ApiKeyStore
      const found = yield* store.get(input.keyId)
      if (Option.isNone(found)) return yield* fail(`Unknown API key "${input.keyId}" (see \`parley keys list --org ORG\`)`)
      if (found.value.revokedAt !== null) {
        return yield* fail(`API key "${input.keyId}" was already revoked at ${found.value.revokedAt}`)
      }
      const at = yield* nowIso
      const revoked = yield* store.revoke(input.keyId, at)
      if (!revoked) return yield* fail(`API key "${input.keyId}" was already revoked`)
      const now = yield* Clock.currentTimeMillis
      const key = summary({ ...found.value, revokedAt: at }, now)
      yield* audited(found.value.orgId, "key.revoked", key.id, [["name", key.name]])
      yield* print(input.json, key, () => `Revoked ${key.id} (${key.name}); requests with it now fail with 401.`)
    })
).pipe(Command.withDescription("Revoke an API key; it fails with 401 from the next request"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys"),
  Command.withSubcommands([create, list, revoke])
)
