/**
 * The core's CRM port for every organisation, and the registry's CRMs as the process runs them (Crms).
 * Each CRM of the registry is built once per process; an organisation's calls go to the CRM it connected
 * (asked of each CRM, which caches the answer), else to the registry's default CRM (`BUILT_IN`). The
 * connection state, which the API's authentication reads, stays in the default CRM either way.
 */
import { Crm, type StorageError } from "@parley/core/internal"
import { Context, Effect, Layer, Option } from "effect"
import type { PlainRoute } from "../http/PlainRoutes.js"
import type { CrmHost, CrmWorkerHost, RunningCrm } from "./Crm.js"
import { BUILT_IN, CRMS } from "./Registry.js"

export interface CrmsService {
  /** Every CRM of the registry, in its order. */
  readonly all: ReadonlyArray<RunningCrm>
  readonly named: (name: string) => Option.Option<RunningCrm>
  /** The CRM the organisation connected; none while it uses the default CRM. */
  readonly connectedOf: (orgId: string) => Effect.Effect<Option.Option<RunningCrm>, StorageError>
  /** Every CRM's plain routes (their OAuth callbacks). */
  readonly routes: Effect.Effect<ReadonlyArray<PlainRoute>, never, Crm.Crm>
  /** Every CRM's background loops, for `serve`. */
  readonly workers: Layer.Layer<never, never, CrmWorkerHost>
}

export class Crms extends Context.Tag("@parley/server/crm/Crms")<Crms, CrmsService>() {}

const storageAsCrm = (operation: string) => (cause: unknown) => new Crm.CrmError({ operation, cause, reason: "unavailable" })

export const layer: Layer.Layer<Crm.Crm | Crms, never, CrmHost> = Layer.scopedContext(
  Effect.gen(function*() {
    const builtIn = yield* BUILT_IN.make
    const all = yield* Effect.forEach(CRMS, (c) => c.build(builtIn))

    const connectedOf = (orgId: string): Effect.Effect<Option.Option<RunningCrm>, StorageError> =>
      Effect.reduce(all, Option.none<RunningCrm>(), (found, crm) =>
        Option.isSome(found)
          ? Effect.succeed(found)
          : Effect.map(crm.isConnected(orgId), (yes) => (yes ? Option.some(crm) : found)))

    /** Runs `connected` for an organisation that connected a CRM, `builtIn` otherwise. */
    const route = <A, E1, E2>(
      orgId: string,
      connected: (crm: RunningCrm) => Effect.Effect<A, E1>,
      otherwise: () => Effect.Effect<A, E2>
    ): Effect.Effect<A, E1 | E2 | Crm.CrmError> =>
      Effect.flatMap(
        Effect.mapError(connectedOf(orgId), storageAsCrm("crm.exists")),
        (crm): Effect.Effect<A, E1 | E2 | Crm.CrmError> => Option.isSome(crm) ? connected(crm.value) : otherwise()
      )

    const service = Crm.Crm.of({
      connection: builtIn.connection,
      setConnection: (orgId, c) =>
        Effect.zipRight(Effect.forEach(all, (crm) => crm.forget(orgId), { discard: true }), builtIn.setConnection(orgId, c)),
      listTemplates: (orgId, limit) =>
        route(orgId, (crm) => crm.records.listTemplates(orgId, limit), () => builtIn.listTemplates(orgId, limit)),
      findTemplate: (orgId, id) =>
        route(orgId, (crm) => crm.records.findTemplate(orgId, id), () => builtIn.findTemplate(orgId, id)),
      upsertTemplate: (row) => route(row.orgId, (crm) => crm.records.upsertTemplate(row), () => builtIn.upsertTemplate(row)),
      findRecord: (orgId, module, id, fieldLabels) =>
        route(orgId, (crm) => crm.records.findRecord(orgId, module, id, fieldLabels), () =>
          builtIn.findRecord(orgId, module, id, fieldLabels)),
      upsertRecord: (row) => route(row.orgId, (crm) => crm.records.upsertRecord(row), () => builtIn.upsertRecord(row)),
      listRecords: (orgId) => route(orgId, (crm) => crm.records.listRecords(orgId), () => builtIn.listRecords(orgId)),
      recordAction: (draft) => route(draft.orgId, (crm) => crm.records.recordAction(draft), () => builtIn.recordAction(draft)),
      findByPhone: (orgId, phone) => route(orgId, (crm) => crm.records.findByPhone(orgId, phone), () => builtIn.findByPhone(orgId, phone))
    })

    const crms = Crms.of({
      all,
      named: (name) => Option.fromNullable(all.find((crm) => crm.name === name)),
      connectedOf,
      routes: Effect.map(Effect.forEach(all, (crm) => crm.routes), (lists) => lists.flat()),
      workers: all.reduce<Layer.Layer<never, never, CrmWorkerHost>>((layers, crm) => Layer.merge(layers, crm.workers), Layer.empty)
    })
    return Context.make(Crm.Crm, service).pipe(Context.add(Crms, crms))
  })
)
