/**
 * Port: the providers the dispatcher hands actions to — a carrier for texts
 * (SMS, WhatsApp), an AI-call provider for calls, and the simulator, which is
 * one provider among them (the embedded default: an organisation that
 * connected none gets it). A dispatcher asks for the organisation's provider
 * of the action's kind and then only speaks this port:
 * - `send` hands the action over; the action id is what ties the provider's
 *   message or call to it;
 * - `candidates` lists what the provider may already have sent for it, after
 *   an attempt whose outcome is unknown (a crash mid-request, a dropped
 *   connection), so that it is never sent twice;
 * - `recheck` reads its status again when reports may have been lost.
 * Statuses come back already mapped onto Parley's (each provider keeps its
 * own table); the provider's raw value travels in `providerStatus`.
 */
import { Context, type Effect, type Option } from "effect"
import type { RecordStatus } from "../contract/Statuses.js"
import type { Action, ActionKind } from "./ActionStore.js"
import type { StorageError } from "./StorageError.js"

/** An action as its provider is given it. */
export type Handoff = Pick<
  Action,
  | "id"
  | "orgId"
  | "kind"
  | "type"
  | "status"
  | "line"
  | "counterpart"
  | "body"
  | "botId"
  | "mode"
  | "purposeMessage"
  | "whatsAppContentSid"
  | "whatsAppContentVariables"
  | "sid"
  | "at"
>

/** What a provider's answer does to the action; a field left undefined keeps its value. */
export interface Change {
  readonly status: RecordStatus
  /** When the dispatcher looks at the action again (epoch ms); null when only reports move it now. */
  readonly workAt: number | null
  readonly sid?: string | undefined
  readonly providerStatus?: string | undefined
  readonly errorMessage?: string | null | undefined
  /** What was sent, when it is not the action's body (a WhatsApp template's text), or a call's transcript. */
  readonly body?: string | undefined
  readonly audioFileId?: string | undefined
  readonly at?: string | undefined
  /**
   * The provider ended it without placing it, for a reason that passes (Retell's `concurrency_limit_reached`):
   * the host places it again after a backoff, as it retries a create refused at its concurrency limit, and
   * `status` (Failed) applies only once the attempts run out.
   */
  readonly notPlaced?: boolean | undefined
}

/** What an action's status is at the provider now; the dispatcher decides when to look again. */
export type Recheck = Omit<Change, "workAt">

/**
 * A request the provider did not accept, as every provider reports it: each provider's own tagged error
 * (its `_tag` names the provider's client) carries these fields.
 */
export interface ProviderFailure {
  readonly _tag: string
  /**
   * rejected: Failed; unsubscribed: Failed, and the recipient's opt-out recorded (source `carrier`: the carrier
   * refuses because they unsubscribed there); auth_failed: Failed, saying to fix the settings; the rest are
   * tried again.
   */
  readonly reason: "rejected" | "unsubscribed" | "rate_limited" | "auth_failed" | "unavailable" | "unknown_outcome"
  /** The HTTP status, when there was an answer. */
  readonly status: number | null
  /** The provider's own error code, when it has one. */
  readonly code?: number | null | undefined
  /** The provider's message; never a secret. */
  readonly message: string
  readonly retryAfterMs: number | null
}

/** Something at the provider that may be the action's, found while reconciling an unknown outcome. */
export interface Candidate {
  /** The provider's id for it. */
  readonly id: string
  /** The Parley action id the provider keeps with it (metadata); null when it keeps none. */
  readonly owner: string | null
  /** What adopting it does to the action. */
  readonly change: Change
}

/** One organisation's client of one provider. */
export interface ProviderClient {
  /**
   * Whether a repeated `send` of the same action id answers its first outcome and sends nothing (the
   * simulator keeps its sends by action id). Such a client needs neither a journal nor reconciliation, and
   * a dispatcher may hand it a whole batch at once (`sendAll`).
   */
  readonly idempotent: boolean
  /** How long after an answer that is not final the dispatcher asks again, in case reports are lost. */
  readonly lookAgainMs: number
  /** Why this action cannot be handed over at all (a provider id missing from the directory); null when it can. */
  readonly cannotSend: (action: Handoff) => string | null
  /** Sends the action; the change its acceptance makes (a `body` in it is what was sent). */
  readonly send: (action: Handoff, now: number) => Effect.Effect<Change, ProviderFailure | StorageError>
  /** Sends several actions in one request, keyed by action id; an idempotent client has it. */
  readonly sendAll?: (
    actions: ReadonlyArray<Handoff>,
    now: number
  ) => Effect.Effect<ReadonlyMap<string, Change>, ProviderFailure | StorageError>
  /**
   * Every message or call at the provider that may be this action's, after an attempt whose outcome is
   * unknown: all of them (every page), never "probably none". Fails when the provider cannot tell.
   */
  readonly candidates: (
    action: Handoff,
    since: number,
    now: number
  ) => Effect.Effect<ReadonlyArray<Candidate>, ProviderFailure | StorageError>
  /** The action's status at the provider (its id is `sid`); None when the provider has nothing to say. */
  readonly recheck: (
    action: Handoff,
    sid: string,
    now: number
  ) => Effect.Effect<Option.Option<Recheck>, ProviderFailure | StorageError>
}

/** A provider as a dispatcher meets it. */
export interface ProviderChoice {
  /** The provider's name: `simulator`, or the one an organisation connected (`parley providers set --kind`). */
  readonly name: string
  /** The name as people write it, for messages. */
  readonly label: string
  readonly client: ProviderClient
}

/** The providers for one dispatch run: each organisation's clients are made once per session. */
export interface ProviderSession {
  /** The provider that takes the organisation's new actions of this kind: the one it connected, or the simulator. */
  readonly current: (orgId: string, kind: ActionKind) => Effect.Effect<ProviderChoice, StorageError>
  /** A provider by name, to follow what was handed to it before; None when the organisation no longer has it. */
  readonly named: (orgId: string, name: string) => Effect.Effect<Option.Option<ProviderChoice>, StorageError>
}

export interface ProvidersService {
  /** Starts a session for one dispatch run (its clients read the organisation's settings once). */
  readonly session: Effect.Effect<ProviderSession>
}

export class Providers extends Context.Tag("@parley/core/ports/Providers")<Providers, ProvidersService>() {}

/** The simulator's name, as a provider. */
export const SIMULATOR = "simulator"
