/**
 * What a request body must be before anything parses it: its media type per
 * route (JSON for /api/v1, form fields for the carrier webhook) and, for
 * JSON, a nesting limit. The limit exists because the schema library and the
 * error formatter walk values recursively: a body nested a few thousand
 * levels deep overflowed the stack (a 500). Parley's deepest valid body is 2
 * levels (`record.module`), so 32 leaves room and costs nothing.
 */

export const MAX_JSON_DEPTH = 32

/** `application/json`, or any structured-syntax `+json` type (`application/ld+json`, `application/vnd.api+json`). */
const JSON_MEDIA_TYPE = /^application\/([\w.+-]*\+)?json\s*(;|$)/i
const FORM_MEDIA_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i

export type BodyKind = "json" | "form"

export const acceptsMediaType = (kind: BodyKind, contentType: string): boolean =>
  (kind === "json" ? JSON_MEDIA_TYPE : FORM_MEDIA_TYPE).test(contentType.trim())

/** Whether the platform's own decoder takes this JSON type as JSON (it looks for the substring `application/json`). */
export const isPlainJsonType = (contentType: string): boolean => contentType.toLowerCase().includes("application/json")

/**
 * Whether a JSON text nests arrays and objects deeper than `max`, scanned
 * without parsing (and without recursion). Brackets inside strings do not
 * count; the text need not be valid JSON.
 */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

export type ParsedJson = { readonly _tag: "Json"; readonly value: unknown } | { readonly _tag: "NotJson" }

/** Bodies are small (64 KiB at most), so parsing once more here costs little and gives a clean 400. */
export const parseJson = (text: string): ParsedJson => {
  try {
    return { _tag: "Json", value: JSON.parse(text) }
  } catch {
    return { _tag: "NotJson" }
  }
}

/**
 * NUL (U+0000) is refused in every piece of text a client sends: Postgres
 * cannot store it in a text column (the query fails: a 503 instead of a 400),
 * and no SMS, name or id needs it. Values are at most MAX_JSON_DEPTH deep, so
 * walking them recursively is safe.
 */
export const containsNul = (value: unknown): boolean => {
  if (typeof value === "string") return value.includes("\u0000")
  if (Array.isArray(value)) return value.some(containsNul)
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).some(([key, inner]) => key.includes("\u0000") || containsNul(inner))
  }
  return false
}

/** NUL in a URL or a form body: raw bytes never get past Node's parser, so it can only come percent-encoded. */
export const encodesNul = (text: string): boolean => /%00/i.test(text) || text.includes("\u0000")
