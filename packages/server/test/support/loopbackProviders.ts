/**
 * Runs a provider client's effect as the server would with PARLEY_PROVIDER_ALLOWED_NETWORKS listing
 * loopback: the clients' tests talk to fakes on 127.0.0.1, which a provider connection reaches only when
 * the operator allows it (without the server's settings a client reaches public addresses only).
 */
import { ConfigProvider, Effect } from "effect"
import { ServerConfig, settingsConfig } from "../../src/config/ServerConfig.js"

const settings = Effect.runSync(
  Effect.withConfigProvider(
    settingsConfig,
    ConfigProvider.fromMap(new Map([["PARLEY_PROVIDER_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128"]]))
  )
)

export const runWithLoopback = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(Effect.provideService(effect, ServerConfig, settings))
