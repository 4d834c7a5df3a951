/**
 * Each organisation's provider accounts, whatever the provider: its API base and account id (shown), and
 * its other settings sealed (SecretBox) as one JSON object that leaves this module only opened for the
 * provider's own module. Which settings a provider has, and which kind of action it serves, is the
 * provider's business (providers/<name>/, Registry): this table only keeps them. An organisation without
 * an account for a kind uses the simulator.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { StorageError } from "@parley/core/domain"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { StoredSettings } from "../providers/Provider.js"
import { NullableString, storage } from "./rows.js"
import * as SecretBox from "./SecretBox.js"
import { transactions } from "./Transactions.js"

/** One account, opened. */
export interface ProviderAccount extends StoredSettings {
  readonly orgId: string
  /** The provider's name (the table's `kind` column). */
  readonly provider: string
  readonly updatedAt: string
}

/** What may be shown of an account: never a secret. */
export interface ProviderAccountSummary {
  readonly orgId: string
  readonly kind: string
  readonly apiBase: string
  readonly accountId: string | null
  readonly updatedAt: string
}

export interface ProviderAccountsService {
  /** The organisation's account with this provider. */
  readonly find: (orgId: string, provider: string) => Effect.Effect<Option.Option<ProviderAccount>, StorageError>
  /** All the organisation's accounts, opened (the dispatcher's one read per organisation and batch). */
  readonly open: (orgId: string) => Effect.Effect<ReadonlyArray<ProviderAccount>, StorageError>
  /**
   * Sets the account, removing in the same commit the organisation's accounts with `replacing` (the other
   * providers of the same kind: one provider per kind); answers which of those it removed.
   */
  readonly set: (
    account: Omit<ProviderAccount, "updatedAt">,
    at: string,
    replacing: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** False when the organisation had no account with that provider. */
  readonly clear: (orgId: string, provider: string) => Effect.Effect<boolean, StorageError>
  readonly list: (orgId: string) => Effect.Effect<ReadonlyArray<ProviderAccountSummary>, StorageError>
}

export class ProviderAccounts extends Context.Tag("@parley/server/store/ProviderAccounts")<
  ProviderAccounts,
  ProviderAccountsService
>() {}

const Row = Schema.Struct({
  org_id: Schema.String,
  kind: Schema.String,
  api_base: Schema.String,
  account_id: NullableString,
  secrets: Schema.String,
  updated_at: Schema.String
})

const decodeSealed = Schema.decodeUnknown(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
const decodeKinds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ kind: Schema.String })))

export const layer = Layer.effect(
  ProviderAccounts,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox.SecretBox
    const transaction = yield* transactions
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, kind: Schema.String }),
      Result: Row,
      execute: ({ kind, orgId }) => sql`SELECT * FROM provider_accounts WHERE org_id = ${orgId} AND kind = ${kind}`
    })
    const byOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: Row,
      execute: (orgId) => sql`SELECT * FROM provider_accounts WHERE org_id = ${orgId} ORDER BY kind`
    })
    // Every stored secret opened once at start (resealSecrets): one that no longer opens is a defect.
    const opened = (row: typeof Row.Type) =>
      Effect.map(Effect.orDie(Effect.flatMap(box.open(row.secrets), decodeSealed)), (sealed): ProviderAccount => ({
        orgId: row.org_id,
        provider: row.kind,
        apiBase: row.api_base,
        accountId: row.account_id,
        sealed,
        updatedAt: row.updated_at
      }))

    return ProviderAccounts.of({
      find: (orgId, provider) =>
        storage("providers.find")(Effect.flatMap(find({ orgId, kind: provider }), (row) =>
          Option.isNone(row) ? Effect.succeed(Option.none()) : Effect.map(opened(row.value), Option.some))),
      open: (orgId) => storage("providers.open")(Effect.flatMap(byOrg(orgId), Effect.forEach(opened))),
      set: (account, at, replacing) =>
        storage("providers.set")(transaction(Effect.gen(function*() {
          const others = replacing.filter((name) => name !== account.provider)
          const removed = others.length === 0 ? [] : yield* Effect.flatMap(
            sql`DELETE FROM provider_accounts WHERE org_id = ${account.orgId} AND kind IN ${sql.in(others)}
                RETURNING kind`,
            decodeKinds
          )
          yield* sql`INSERT INTO provider_accounts ${
            sql.insert({
              org_id: account.orgId,
              kind: account.provider,
              api_base: account.apiBase,
              account_id: account.accountId,
              secrets: box.seal(JSON.stringify(account.sealed)),
              updated_at: at
            })
          } ON CONFLICT (org_id, kind) DO UPDATE SET api_base = excluded.api_base, account_id = excluded.account_id,
            secrets = excluded.secrets, updated_at = excluded.updated_at`
          return removed.map((r) => r.kind)
        }))),
      clear: (orgId, provider) =>
        storage("providers.clear")(Effect.map(
          sql`DELETE FROM provider_accounts WHERE org_id = ${orgId} AND kind = ${provider} RETURNING org_id`,
          (rows) => rows.length > 0
        )),
      list: (orgId) =>
        storage("providers.list")(Effect.map(byOrg(orgId), (rows) =>
          rows.map((r) => ({
            orgId: r.org_id,
            kind: r.kind,
            apiBase: r.api_base,
            accountId: r.account_id,
            updatedAt: r.updated_at
          }))))
    })
  })
)
