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

/** Bodies are small (64 KiB at most), so parsing once more here costs little and gives a clean 400. */
export const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
