/**
 * `parley keys create | list | revoke | roll | rename`: the organisation's API keys. The token
 * is printed once, at creation (or roll); only its hash is stored. Revocation is read on
 * every request, so a running server refuses the key on its next request.
 */
import { audited } from "../Audit.js"
import { Args, Command, Options } from "@effect/cli"
import { ALL_SCOPES, ApiKeyStore } from "@parley/core/internal"
import { Clock, Effect, Option } from "effect"
import { issueKey, type KeyField, type KeyRefused, renameKey, ROLL_OVERLAPS, rollKey } from "../../admin/KeyIssuing.js"
import { csv, fail, fields, nowIso, orNone, requireOrg } from "../Input.js"
import { json, optionalText, orgFlag, print, table } from "../Output.js"


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
  expiresAt: "--expires-at",
  key: "--key",
  overlap: "--overlap"
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
    org: orgFlag,
    name: Options.text("name").pipe(Options.withDescription("A name to tell the key apart")),
    scopes: Options.text("scopes").pipe(
      Options.withDescription(`Comma-separated scopes (${ALL_SCOPES.join(", ")}), or all`)
    ),
    mode: Options.choice("mode", ["test", "live"]).pipe(
      Options.withDescription("test keys simulate creation and cancellation; live keys act")
    ),
    numbers: optionalText("numbers", "Restrict the key to these number sids (comma-separated; default all)"),
    bots: optionalText("bots", "Restrict the key to these bot ids (comma-separated; default all)"),
    expiresAt: optionalText("expires-at", "ISO 8601 expiry with an offset, such as 2030-01-31T00:00:00Z")
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

const list = Command.make("list", { json, org: orgFlag }, (input) =>
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

const keyOption = Options.text("key").pipe(Options.withDescription("API key id (key_…)"))

const roll = Command.make(
  "roll",
  {
    json,
    org: orgFlag,
    key: keyOption,
    overlap: Options.choice("overlap", ROLL_OVERLAPS.map((o) => o.name)).pipe(
      Options.withDescription("How long the old secret keeps working: now, 1h, 24h or 7d"),
      Options.withDefault("24h")
    )
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const { key, old, token } = yield* rollKey(input.org, input.key, input.overlap).pipe(
        Effect.catchTag("KeyRefused", (refusal) => fail(refusalLine(input.org, refusal)))
      )
      yield* audited(key.orgId, "key.rolled", old.id, [["name", key.name], ["new", key.id], ["overlap", input.overlap]])
      const rolled = { id: key.id, key: token, orgId: key.orgId, name: key.name, mode: key.mode, replaces: old.id, oldExpiresAt: old.expiresAt }
      yield* print(input.json, rolled, () =>
        [
          `Rolled ${old.id} (${key.name}): the new key is ${key.id}`,
          "",
          `  ${token}`,
          "",
          "This is the only time the key is shown: store it on your server, never in frontend code.",
          `The old key works until ${orNone(old.expiresAt, "never")}, then fails with 401.`
        ].join("\n"))
    })
).pipe(Command.withDescription("Roll an API key: print a new secret once; the old one works for the overlap"))

const rename = Command.make(
  "rename",
  {
    json,
    org: orgFlag,
    key: keyOption,
    name: Options.text("name").pipe(Options.withDescription("The key's new name"))
  },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const key = yield* renameKey(input.org, input.key, input.name).pipe(
        Effect.catchTag("KeyRefused", (refusal) => fail(refusalLine(input.org, refusal)))
      )
      yield* audited(key.orgId, "key.changed", key.id, [["name", key.name], ["was", key.previousName]])
      const now = yield* Clock.currentTimeMillis
      yield* print(input.json, summary(key, now), () => `Renamed ${key.id} from "${key.previousName}" to "${key.name}".`)
    })
).pipe(Command.withDescription("Rename an API key"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys"),
  Command.withSubcommands([create, list, revoke, roll, rename])
)
