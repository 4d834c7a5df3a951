/**
 * Canonical JSON: keys sorted at every depth, so two payloads that mean the
 * same thing produce the same idempotency fingerprint whatever their key order.
 */
type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const normalise = (value: unknown): Json => {
  if (value === null || typeof value === "boolean" || typeof value === "number" || typeof value === "string") {
    return value
  }
  if (Array.isArray(value)) return value.map(normalise)
  if (typeof value === "object") {
    const out: Record<string, Json> = {}
    for (const key of Object.keys(value).sort()) {
      const inner: unknown = Reflect.get(value, key)
      if (inner !== undefined) out[key] = normalise(inner)
    }
    return out
  }
  return null
}

export const canonicalJson = (value: unknown): string => JSON.stringify(normalise(value))
