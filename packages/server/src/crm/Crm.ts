/**
 * What a CRM is to the rest of the server: the one seam a CRM plugs into. A CRM is a folder
 * (`crm/<name>/`: its client, OAuth, schema set-up, write-back and status wording) whose module file
 * describes it with `defineCrm`, and one line in Registry.ts. Nothing outside its folder names it: the
 * console's CRM page, `parley crm connect | status | setup | update | disconnect`, the OAuth callback
 * route (`/oauth/<name>/callback`), the sealing of stored secrets, the background loops of `serve` and the
 * metrics all go through the registry (CrmLive builds every CRM once per process).
 *
 * The default CRM (the registry's `BUILT_IN`, in its own folder like the others) is described apart (`BuiltInCrmModule`): it is
 * what an organisation uses until it connects another CRM, and it keeps every organisation's connection state
 * (which the API's authentication reads) whichever CRM serves its records.
 */
import type { SqlError } from "@effect/sql"
import type { SqlClient } from "@effect/sql"
import type { ActionStore, Crm, EventOutbox, StorageError } from "@parley/core/internal"
import { Data, Effect, Layer, type Option, type Scope } from "effect"
import type { ServerConfig } from "../config/ServerConfig.js"
import type { PlainRoute } from "../http/PlainRoutes.js"
import type { LoopHeartbeats } from "../observability/Health.js"
import type { Metrics } from "../observability/Metrics.js"
import type { RowLocks } from "../store/RowLocks.js"
import type { SecretBox, SecretKeyError } from "../store/SecretBox.js"
import type { SettingsCache } from "../store/SettingsCache.js"

/** What a CRM's own code may ask of the process when it is built: the store, its secrets, the settings. */
export type CrmHost = SqlClient.SqlClient | ServerConfig | SecretBox | SettingsCache | RowLocks

/** What a CRM's background loops (its write-back outbox…) may ask for besides: the whole CRM port, the actions, events. */
export type CrmWorkerHost =
  | CrmHost
  | Crm.Crm
  | ActionStore.ActionStore
  | EventOutbox.EventOutbox
  | LoopHeartbeats
  | Metrics

/** An environment variable a CRM reads (documented in docs/configuration.md; the docs test checks both ways). */
export interface CrmVariable {
  readonly name: string
  readonly description: string
}

/** Connecting failed in a way the person connecting can act on; `message` says how, in words. */
export class CrmConnectFailed extends Data.TaggedError("CrmConnectFailed")<{
  readonly status: number
  readonly message: string
}> {}

/** `crm connect ORG --provider <name>`: where to send the person who grants Parley access. */
export interface ConnectStarted {
  /** The CRM's consent page (valid 10 minutes, usable once). */
  readonly url: string
  /** Where the CRM sends the browser back: `{PARLEY_PUBLIC_URL}/oauth/<name>/callback`. */
  readonly redirectUri: string
  readonly scopes: ReadonlyArray<string>
}

/** What `parley crm status` and the console's CRM page show of a connected CRM; never a token. */
export interface CrmStatus {
  /** The connected user, with the CRM's own fields (`crm status --json` prints them as they are). */
  readonly user: {
    readonly name: string
    readonly email: string
    readonly [field: string]: string | null
  }
  /** The user's id in the CRM's words: `{ text: "zuid", page: "ZUID", value }`. */
  readonly userRef: { readonly text: string; readonly page: string; readonly value: string }
  /** The CRM account (organisation, portal) it is connected to; printed under the CRM's `accountKey`. */
  readonly account: { readonly id: string; readonly name: string }
  readonly since: string | null
  /** The CRM's last error: its code when it has one (OAUTH_SCOPE_MISMATCH, OAUTH_REQUIRED…). */
  readonly lastError: { readonly code: string | null; readonly message: string; readonly at: string | null } | null
}

/** `parley crm setup ORG`: what the CRM needed, what was there, and what it refused (to do by hand). */
export interface SetupReport {
  readonly created: ReadonlyArray<string>
  readonly existing: ReadonlyArray<string>
  /** Instructions for an administrator; empty when everything is in place. */
  readonly byHand: ReadonlyArray<string>
}

/**
 * An on/off setting of an organisation's CRM: `parley crm update ORG --<flag> on|off` and a section of the
 * console's CRM page (posting to `/admin/crm/<flag>`).
 */
export interface CrmToggle {
  readonly flag: string
  /** The CLI option's description. */
  readonly description: string
  /** The console section's heading. */
  readonly title: string
  /** The line `crm update` prints. */
  readonly describe: (orgId: string, on: boolean) => string
  /** The console section's sentence after "On: " / "Off: ". */
  readonly explain: (on: boolean) => string
  /** The console's button, which turns it to the other state. */
  readonly button: (on: boolean) => string
  /** The notice after the console changed it. */
  readonly notice: (on: boolean) => string
}

/**
 * The parts of the core's CRM port a connected CRM answers (CrmLive routes each organisation's calls to
 * its CRM, else to the default one); `connection`/`setConnection` stay with the default CRM.
 */
export type CrmRecords = Pick<
  Crm.CrmService,
  "listTemplates" | "findTemplate" | "upsertTemplate" | "findRecord" | "upsertRecord" | "listRecords" | "recordAction" | "findByPhone"
>

/** A CRM as the process runs it, its own services already provided (built by `defineCrm`'s `build`). */
export interface RunningCrm extends RunningCrmParts {
  readonly name: string
  readonly label: string
  readonly vendor: string
  readonly accountKey: string
  readonly toggles: ReadonlyArray<CrmToggle>
}

/** What a CRM's `make` builds; `defineCrm` adds what its definition says (name, wording, toggles). */
export interface RunningCrmParts {
  /** The consent page's origin (the console's forms may be redirected there); none when not configured. */
  readonly consentOrigin: Option.Option<string>
  /** Whether the organisation is connected to this CRM (asked on every creation: cache it). */
  readonly isConnected: (orgId: string) => Effect.Effect<boolean, StorageError>
  readonly records: CrmRecords
  /** Forgets what is cached for the organisation (its connection changed). */
  readonly forget: (orgId: string) => Effect.Effect<void>
  readonly connect: (
    orgId: string,
    options: { readonly switchOrg: boolean }
  ) => Effect.Effect<ConnectStarted, CrmConnectFailed | StorageError>
  /** None when the organisation is not connected to this CRM. */
  readonly status: (orgId: string) => Effect.Effect<Option.Option<CrmStatus>, StorageError | SecretKeyError>
  /** Revokes the organisation's grant at the CRM and forgets it; whether there was one. */
  readonly disconnect: (orgId: string) => Effect.Effect<boolean, StorageError | SecretKeyError>
  readonly setup: (orgId: string) => Effect.Effect<SetupReport, Crm.CrmError>
  /** The organisation's value of one of the CRM's toggles (its `flag`), and changing it. */
  readonly toggle: (flag: string) => {
    readonly enabled: (orgId: string) => Effect.Effect<boolean, StorageError>
    readonly set: (orgId: string, on: boolean) => Effect.Effect<void, StorageError>
  }
  /** Its plain routes (the OAuth callback); they set the connection through the CRM port. */
  readonly routes: Effect.Effect<ReadonlyArray<PlainRoute>, never, Crm.Crm>
  /** Its background loops for `serve` (write-back, inbound records). */
  readonly workers: Layer.Layer<never, never, CrmWorkerHost>
}

/** What a CRM's folder describes; `defineCrm` turns it into the registry's `CrmModule`. */
export interface CrmDefinition<Own> {
  /** `--provider <name>`, `/oauth/<name>/callback`, `/admin/crm/<name>`, the status's `provider`. */
  readonly name: string
  /** As people write it: "Acme CRM" (the console's headings and buttons). */
  readonly label: string
  /** The company, in a sentence: "Acme refused…", "Acme's consent URL", the metrics' help. */
  readonly vendor: string
  /** The key of the CRM account in `crm status --json` ("acmeOrg"). */
  readonly accountKey: string
  /** The environment variables it reads (its configuration module reads them; docs list them). */
  readonly variables: ReadonlyArray<CrmVariable>
  /** Lines of `crm connect --help` and `crm setup`'s refusal, in its words. */
  readonly connectHint: string
  /** Its on/off settings (`crm update --<flag>`, the console's CRM page); their values are the running CRM's `toggle`. */
  readonly toggles: ReadonlyArray<CrmToggle>
  /** The contact field the consent work reads and sets an opt-out in, when the CRM has one. */
  readonly optOutField?: string
  /** Its own services (configuration, connections table), built once per process. */
  readonly layer: Layer.Layer<Own, never, CrmHost>
  /** The running CRM over its own services and the default CRM (which keeps the connection state). */
  readonly make: (builtIn: Crm.CrmService) => Effect.Effect<RunningCrmParts, never, Own | CrmHost | Scope.Scope>
  /** Seals its stored secrets under the current key (`serve`, at start; see SecretBox.resealSecrets). */
  readonly resealSecrets: Effect.Effect<void, SecretKeyError | SqlError.SqlError, SqlClient.SqlClient | SecretBox>
}

/**
 * The default CRM, which every organisation uses until it connects another: no OAuth, no settings, no
 * background loops; its service is what the others are built over (it keeps the connection state).
 */
export interface BuiltInCrmModule {
  /** `--provider <name>` (the default) and `crm status`'s `provider` while no other CRM is connected. */
  readonly name: string
  /** As a heading writes it. */
  readonly label: string
  /** As a sentence writes it ("… stays in use"). */
  readonly phrase: string
  /** Its line of `crm connect --help`. */
  readonly connectHint: string
  readonly make: Effect.Effect<Crm.CrmService, never, SqlClient.SqlClient>
}

/** A registered CRM, its own services hidden. */
export interface CrmModule {
  readonly name: string
  readonly label: string
  readonly vendor: string
  readonly accountKey: string
  readonly variables: ReadonlyArray<CrmVariable>
  readonly connectHint: string
  readonly toggles: ReadonlyArray<CrmToggle>
  readonly optOutField: string | undefined
  readonly build: (builtIn: Crm.CrmService) => Effect.Effect<RunningCrm, never, CrmHost | Scope.Scope>
  readonly resealSecrets: Effect.Effect<void, SecretKeyError | SqlError.SqlError, SqlClient.SqlClient | SecretBox>
}

export const defineCrm = <Own>(definition: CrmDefinition<Own>): CrmModule => ({
  name: definition.name,
  label: definition.label,
  vendor: definition.vendor,
  accountKey: definition.accountKey,
  variables: definition.variables,
  connectHint: definition.connectHint,
  toggles: definition.toggles,
  optOutField: definition.optOutField,
  build: (builtIn) =>
    Effect.flatMap(Layer.build(definition.layer), (own) =>
      Effect.map(Effect.provide(definition.make(builtIn), own), (parts): RunningCrm => ({
        ...parts,
        name: definition.name,
        label: definition.label,
        vendor: definition.vendor,
        accountKey: definition.accountKey,
        toggles: definition.toggles
      }))),
  resealSecrets: definition.resealSecrets
})
