/**
 * The core's Providers port for the server: an organisation's provider for a
 * kind of action is the one it set (`parley providers set`, the console; the
 * modules are listed in Registry.ts), or else the simulator, which keeps its
 * sends in the database (store/SqlSimulatorMemory). Setting one replaces
 * another of the same kind; were there two, the one set last serves.
 *
 * A session lives for one dispatch batch: each organisation's accounts are
 * read, and each client made (a client may read the directory), once in it.
 */
import { type Organisations, Providers, Simulator, type SimulatorMemory, type StorageError } from "@parley/core/internal"
import { Context, Effect, Layer, Option } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { type ProviderAccount, ProviderAccounts } from "../store/SqlProviderAccounts.js"
import type { Provider, ServedKind } from "./Provider.js"
import { providerNamed, providersFor } from "./Registry.js"

/** The organisation's provider for a kind among its accounts. */
const accountFor = (accounts: ReadonlyArray<ProviderAccount>, kind: ServedKind) => {
  const serving = providersFor(kind)
  return accounts
    .flatMap((account) => {
      const provider = serving.find((p) => p.name === account.provider)
      return provider === undefined ? [] : [{ account, provider }]
    })
    .sort((a, b) => b.account.updatedAt.localeCompare(a.account.updatedAt))[0]
}

export const layer = Layer.effect(
  Providers.Providers,
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const accounts = yield* ProviderAccounts
    const context = yield* Effect.context<Organisations.Organisations>()
    const simulatorContext = Context.add(
      yield* Effect.context<SimulatorMemory.SimulatorMemory | Organisations.Organisations>(),
      Simulator.SimulatorStep,
      { millis: config.simStepMs }
    )

    return Providers.Providers.of({
      session: Effect.gen(function*() {
        const simulator = yield* Effect.provide(Simulator.choice, simulatorContext)
        const opened = new Map<string, ReadonlyArray<ProviderAccount>>()
        const made = new Map<string, Providers.ProviderChoice>()

        const accountsOf = (orgId: string) =>
          Effect.gen(function*() {
            const known = opened.get(orgId)
            if (known !== undefined) return known
            const found = yield* accounts.open(orgId)
            opened.set(orgId, found)
            return found
          })

        const clientOf = (provider: Provider, account: ProviderAccount) =>
          Effect.gen(function*() {
            const key = `${account.orgId}\u0000${provider.name}`
            const known = made.get(key)
            if (known !== undefined) return known
            const client = yield* Effect.provide(provider.client(account, { config, orgId: account.orgId }), context)
            const choice: Providers.ProviderChoice = { name: provider.name, label: provider.label, client }
            made.set(key, choice)
            return choice
          })

        return {
          current: (orgId, kind): Effect.Effect<Providers.ProviderChoice, StorageError> =>
            Effect.flatMap(accountsOf(orgId), (found) => {
              const chosen = accountFor(found, kind)
              return chosen === undefined ? Effect.succeed(simulator) : clientOf(chosen.provider, chosen.account)
            }),
          named: (orgId, name) =>
            name === Providers.SIMULATOR
              ? Effect.succeed(Option.some(simulator))
              : Effect.flatMap(accountsOf(orgId), (found) => {
                const provider = providerNamed(name)
                const account = found.find((a) => a.provider === name)
                return provider === undefined || account === undefined
                  ? Effect.succeed(Option.none())
                  : Effect.map(clientOf(provider, account), Option.some)
              })
        } satisfies Providers.ProviderSession
      })
    })
  })
)
