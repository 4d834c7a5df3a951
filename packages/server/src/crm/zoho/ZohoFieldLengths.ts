/**
 * Never write past a field's `length` (issue 31): Zoho refuses a whole record (INVALID_DATA,
 * `maximum_length`) when one value is too long, so a 2,001-character reply in an organisation whose Body is
 * still Zoho's small text area would never reach it. Each field's length is read from `/settings/fields`
 * (cached FIELD_LENGTHS_CACHE_MS per organisation and module); a longer text is cut to fit, ending with
 * CUT_MARKER so a reader in Zoho sees it was cut. Parley keeps the full text (the API and events show it).
 */
import type { Crm } from "@parley/core/domain"
import { Clock, Effect } from "effect"
import { listOf, text } from "./ZohoApi.js"
import type { ZohoSessionService } from "./ZohoSession.js"
import { makeSingleFlight } from "../SingleFlight.js"

export const FIELD_LENGTHS_CACHE_MS = 10 * 60_000
/** Ends a text cut to fit its Zoho field. */
export const CUT_MARKER = " … [cut to fit this Zoho field; the full text is in Parley]"

/** `value` cut to at most `length` characters (code points, as Zoho counts), ending with CUT_MARKER when cut. */
export const fitText = (value: string, length: number): string => {
  const chars = [...value]
  if (chars.length <= length) return value
  const marker = [...CUT_MARKER]
  if (length <= marker.length) return chars.slice(0, length).join("")
  return chars.slice(0, length - marker.length).join("") + CUT_MARKER
}

export const makeFieldLengths = (session: ZohoSessionService) => {
  const cache = new Map<string, { readonly at: number; readonly value: ReadonlyMap<string, number> }>()
  const singleFlight = makeSingleFlight()
  const fresh = (key: string, now: number) => {
    const hit = cache.get(key)
    return hit !== undefined && now - hit.at < FIELD_LENGTHS_CACHE_MS ? hit.value : undefined
  }

  const lengths = (orgId: string, module: string): Effect.Effect<ReadonlyMap<string, number>, Crm.CrmError> =>
    Effect.gen(function*() {
      const key = `${orgId}\u0000${module}`
      const known = fresh(key, yield* Clock.currentTimeMillis)
      return known ?? (yield* singleFlight(key, read(orgId, module, key)))
    })

  /** Reads a module's lengths, unless a concurrent reader (single flight) just did. */
  const read = (orgId: string, module: string, key: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const known = fresh(key, now)
      if (known !== undefined) return known
      const answer = yield* session.call(orgId, "GET", `/settings/fields?module=${encodeURIComponent(module)}`)
      const value = new Map<string, number>()
      for (const f of listOf(answer, "fields")) {
        const api = text(f, "api_name")
        const length = f["length"]
        if (api !== undefined && typeof length === "number" && length > 0) value.set(api, length)
      }
      cache.set(key, { at: now, value })
      return value
    })

  /** The records with every text value cut to its field's length. */
  const fit = <R extends Readonly<Record<string, unknown>>>(orgId: string, module: string, records: ReadonlyArray<R>) =>
    Effect.map(lengths(orgId, module), (known) =>
      records.map((record) => {
        const out: Record<string, unknown> = { ...record }
        for (const [field, value] of Object.entries(record)) {
          const length = known.get(field)
          if (typeof value === "string" && length !== undefined) out[field] = fitText(value, length)
        }
        return out
      }))

  /** Forgets an organisation's lengths (after `crm setup` changed its fields). */
  const forget = (orgId: string) => {
    for (const key of cache.keys()) if (key.startsWith(`${orgId}\u0000`)) cache.delete(key)
  }

  return { lengths, fit, forget }
}
