/**
 * `parley providers set | show | clear`: which real provider an organisation sends each kind of action
 * through. Without one the organisation uses the simulator. The flags are the registered providers'
 * settings (providers/Registry.ts, each provider's …Settings.ts); credentials are stored sealed and never
 * printed again, not even by `show`. Setting a provider for a kind another one serves replaces it.
 */
import { audited } from "../Audit.js"
import { Command, Options } from "@effect/cli"
import { Clock, Effect, Either, Option } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { publicBase } from "../../providers/CallbackUrls.js"
import type { ServedKind, SettingField } from "../../providers/Provider.js"
import { checkSettings } from "../../providers/ProviderSettings.js"
import { PROVIDER_NAMES, PROVIDERS, providerNamed, providersFor } from "../../providers/Registry.js"
import { ProviderAccounts } from "../../store/SqlProviderAccounts.js"
import { fail, fields, requireOrg } from "../Input.js"
import { json, optionalText, orgFlag, print, table } from "../Output.js"
import { isInteractive, oneFromStdin, resolveSecret, type SecretInput, secretOptions } from "../Secrets.js"

const kindOption = Options.choice("kind", PROVIDER_NAMES).pipe(
  Options.withDescription(PROVIDERS.map((p) => `${p.name} (${p.serves})`).join(", "))
)

/** Each flag once, described for every provider that takes it. */
const flagsOf = (secret: boolean) => {
  const byFlag = new Map<string, Array<{ readonly label: string; readonly field: SettingField }>>()
  for (const provider of PROVIDERS) {
    for (const field of provider.fields.filter((f) => f.secret === secret)) {
      byFlag.set(field.flag, [...(byFlag.get(field.flag) ?? []), { label: provider.label, field }])
    }
  }
  return [...byFlag].map(([flag, uses]) => {
    const [first] = uses
    const description = uses.length === PROVIDERS.length && first !== undefined
      ? first.field.description
      : uses.map(({ field, label }) => `${label}: ${field.description}`).join("; ")
    return { flag, description }
  })
}

const plainOptions = Object.fromEntries(
  flagsOf(false).map(({ description, flag }) => [
    flag,
    optionalText(flag, description)
  ])
)
const secretFlags = Object.fromEntries(
  flagsOf(true).map(({ description, flag }) => [flag, Options.all(secretOptions(flag, description))])
)

const set = Command.make(
  "set",
  { json, org: orgFlag, kind: kindOption, plain: Options.all(plainOptions), secrets: Options.all(secretFlags) },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const provider = providerNamed(input.kind)
      if (provider === undefined) return yield* fail(`--kind ${input.kind} is not a provider`)
      // Another provider's flag is a mistake to say, not to drop: its value would be silently lost.
      const own = new Set(provider.fields.map((f) => f.flag))
      const foreign = [
        ...Object.entries(input.plain).filter(([flag, value]) => Option.isSome(value) && !own.has(flag)),
        ...Object.entries(input.secrets).filter(([flag, secret]) =>
          (Option.isSome(secret.value) || secret.stdin || Option.isSome(secret.env)) && !own.has(flag)
        )
      ].map(([flag]) => `--${flag}`)
      if (foreign.length > 0) {
        return yield* fail(
          `${foreign.join(", ")} ${foreign.length === 1 ? "is not a setting" : "are not settings"} of ${provider.label}; ` +
            `--kind ${provider.name} takes ${[...own].map((flag) => `--${flag}`).join(", ")}`
        )
      }
      const interactive = isInteractive()
      const given = (flag: string): SecretInput => input.secrets[flag] ?? { value: Option.none(), stdin: false, env: Option.none() }
      const secrets = provider.fields.filter((f) => f.secret)
      // Secrets from standard input, a named environment variable or a prompt (Secrets), the flag last.
      yield* oneFromStdin(secrets.map((f) => [f.flag, given(f.flag)] as const))
      const values: Record<string, string | undefined> = {}
      for (const field of provider.fields) {
        values[field.name] = field.secret
          ? Option.getOrUndefined(yield* resolveSecret(field.flag, given(field.flag), field.required && interactive))
          : Option.getOrUndefined(input.plain[field.flag] ?? Option.none())
      }
      // The rules are the console's too (ProviderSettings); a refusal is reported against its flag.
      const checked = checkSettings(provider, values)
      if (Either.isLeft(checked)) {
        const flag = provider.fields.find((f) => f.name === checked.left.field)?.flag ?? checked.left.field
        return yield* fail(`--${flag} ${checked.left.message}`)
      }
      const stored = checked.right
      const at = new Date(yield* Clock.currentTimeMillis).toISOString()
      const replaced = yield* (yield* ProviderAccounts).set(
        { orgId: input.org, provider: provider.name, ...stored },
        at,
        providersFor(provider.kind).map((p) => p.name)
      )
      yield* audited(input.org, "provider.set", provider.name, [["accountId", stored.accountId ?? ""]])
      const setup = provider.setup({ publicBase: publicBase(yield* ServerConfig), orgId: input.org })
      const shown = { orgId: input.org, kind: provider.name, apiBase: stored.apiBase, accountId: stored.accountId, replaced }
      const replacedLabels = replaced.map((name) => providerNamed(name)?.label ?? name)
      yield* print(input.json, { ...shown, setup }, () =>
        [
          `${input.org} now sends ${provider.serves} through ${provider.label}.`,
          ...(replaced.length === 0 ? [] : [
            `${provider.label} replaces ${replacedLabels.join(", ")} for its ${provider.serves}: ` +
            `${replacedLabels.join(", ")}'s settings were removed.`
          ]),
          fields([["api base", stored.apiBase], ...(stored.accountId === null ? [] : [["account", stored.accountId] as const])]),
          "The credentials are stored sealed and will not be shown again.",
          ...setup
        ].join("\n"))
    })
).pipe(Command.withDescription(
  `Connect an organisation to ${PROVIDERS.map((p) => p.label).join(", ")} (credentials are stored sealed)`
))

const show = Command.make(
  "show",
  { json, org: orgFlag },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const accounts = yield* (yield* ProviderAccounts).list(input.org)
      const using = (kind: ServedKind) =>
        accounts.find((a) => providersFor(kind).some((p) => p.name === a.kind))?.kind ?? "simulator"
      const base = publicBase(yield* ServerConfig)
      const setup = accounts.flatMap((a) => providerNamed(a.kind)?.setup({ publicBase: base, orgId: input.org }) ?? [])
      const summary = { orgId: input.org, texts: using("message"), aiCalls: using("ai_call"), accounts, setup }
      yield* print(input.json, summary, () =>
        [
          `Texts of ${input.org}: ${summary.texts}; AI calls: ${summary.aiCalls}`,
          ...(accounts.length === 0 ? [] : [
            table([
              ["KIND", "API BASE", "ACCOUNT", "UPDATED"],
              ...accounts.map((a) => [a.kind, a.apiBase, a.accountId ?? "-", a.updatedAt])
            ])
          ]),
          ...setup
        ].join("\n"))
    })
).pipe(Command.withDescription("Which providers an organisation uses (never a secret)"))

const clear = Command.make(
  "clear",
  { json, org: orgFlag, kind: kindOption },
  (input) =>
    Effect.gen(function*() {
      yield* requireOrg(input.org)
      const removed = yield* (yield* ProviderAccounts).clear(input.org, input.kind)
      if (!removed) return yield* fail(`${input.org} has no ${input.kind} account`)
      yield* audited(input.org, "provider.cleared", input.kind)
      const serves = providerNamed(input.kind)?.serves ?? "actions"
      yield* print(input.json, { orgId: input.org, kind: input.kind, cleared: true }, () =>
        `${input.org} no longer uses ${input.kind}; its ${serves} go to the simulator.`)
    })
).pipe(Command.withDescription("Return an organisation's texts or AI calls to the simulator"))

export const providers = Command.make("providers").pipe(
  Command.withDescription(`Real providers: ${PROVIDERS.map((p) => `${p.label} (${p.serves})`).join(", ")}`),
  Command.withSubcommands([set, show, clear])
)
