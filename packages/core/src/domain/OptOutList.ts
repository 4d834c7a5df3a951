/**
 * /api/v1/opt-outs: an integration reads and changes the organisation's opt-out list (the rules are
 * Consent's). The list names recipients of every line, so listing it takes a key without number or bot
 * restrictions; reading or changing one number's entry takes only the scope. Changes are recorded with
 * source `api` and the key's id; a key never lifts a carrier's opt-out (409).
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { InvalidRequest, NotFound, OptOutNotRemovable, ResourceDenied } from "../contract/Errors.js"
import { type ListOptOutsParams, OptOut, OptOutPage, type PutOptOutRequest } from "../contract/OptOuts.js"
import { type OptOutEntry, OptOuts, publicOptOut } from "../ports/OptOuts.js"
import type { StorageError } from "../ports/StorageError.js"
import type { CallerInfo } from "./Caller.js"
import { Consent } from "./Consent.js"
import { CursorSigner } from "./Cursors.js"

export const PAGE_SIZE = 50

const PageCursor = Schema.Struct({ k: Schema.Literal("optouts"), f: Schema.String, c: Schema.String, p: Schema.String })

export const toOptOut = (entry: OptOutEntry): OptOut =>
  OptOut.make(publicOptOut(entry))

const notFound = (phone: string) => new NotFound({ message: `${phone} has not opted out: it may be texted and called.` })

export interface OptOutListService {
  readonly list: (
    caller: CallerInfo,
    params: typeof ListOptOutsParams.Type
  ) => Effect.Effect<OptOutPage, ResourceDenied | InvalidRequest | StorageError>
  readonly get: (caller: CallerInfo, phone: string) => Effect.Effect<OptOut, NotFound | StorageError>
  readonly put: (caller: CallerInfo, phone: string, request: PutOptOutRequest) => Effect.Effect<OptOut, StorageError>
  readonly remove: (caller: CallerInfo, phone: string) => Effect.Effect<void, NotFound | OptOutNotRemovable | StorageError>
}

export class OptOutList extends Context.Tag("@parley/core/OptOutList")<OptOutList, OptOutListService>() {}

export const layer: Layer.Layer<OptOutList, never, OptOuts | Consent | CursorSigner> = Layer.effect(
  OptOutList,
  Effect.gen(function*() {
    const optOuts = yield* OptOuts
    const consent = yield* Consent
    const signer = yield* CursorSigner
    const byKey = (caller: CallerInfo) =>
      Effect.map(Clock.currentTimeMillis, (now) => ({
        source: "api" as const,
        cause: `API key ${caller.keyId}`,
        at: new Date(now).toISOString()
      }))
    return OptOutList.of({
      list: (caller, params) =>
        Effect.gen(function*() {
          if (caller.numberSids.length > 0 || caller.botIds.length > 0) {
            return yield* new ResourceDenied({
              message: "The opt-out list names recipients of every line: list it with a key without number or bot restrictions."
            })
          }
          const filter = params.phone ?? ""
          let before: { readonly createdAt: string; readonly phone: string } | undefined
          if (params.cursor !== undefined) {
            const opened = signer.open(caller.orgId, params.cursor, PageCursor)
            if (Option.isNone(opened) || opened.value.f !== filter) {
              return yield* new InvalidRequest({
                message: "cursor: not a cursor this API issued for this list and filter; pass nextCursor back unchanged."
              })
            }
            before = { createdAt: opened.value.c, phone: opened.value.p }
          }
          const rows = yield* optOuts.page({ orgId: caller.orgId, phone: params.phone, before, limit: PAGE_SIZE + 1 })
          const items = rows.slice(0, PAGE_SIZE)
          const last = items[items.length - 1]
          return OptOutPage.make({
            items: items.map(toOptOut),
            nextCursor: rows.length > PAGE_SIZE && last !== undefined
              ? signer.seal(caller.orgId, { k: "optouts", f: filter, c: last.createdAt, p: last.phone })
              : null
          })
        }),
      get: (caller, phone) =>
        Effect.flatMap(optOuts.find(caller.orgId, phone), (found) =>
          Option.match(found, { onNone: () => Effect.fail(notFound(phone)), onSome: (entry) => Effect.succeed(toOptOut(entry)) })),
      put: (caller, phone, request) =>
        Effect.flatMap(byKey(caller), (by) =>
          Effect.map(
            consent.optOut(caller.orgId, phone, { channels: request.channels, reason: request.reason }, by),
            ({ entry }) => toOptOut(entry)
          )),
      remove: (caller, phone) =>
        Effect.flatMap(byKey(caller), (by) =>
          consent.optIn(caller.orgId, phone, by).pipe(
            Effect.asVoid,
            Effect.catchTags({
              NotOptedOut: () => Effect.fail(notFound(phone)),
              CarrierOptOut: ({ entry }) =>
                Effect.fail(
                  new OptOutNotRemovable({
                    message: `${phone} is unsubscribed at the carrier (recorded ${entry.createdAt}): only the recipient's ` +
                      "own START reply or an administrator (`parley optouts remove`, the console) lifts it."
                  })
                )
            })
          ))
    })
  })
)
