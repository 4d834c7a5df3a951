/**
 * Schema failures of a request (path, query, headers, body) in words for the
 * contract's INVALID_REQUEST, naming the field.
 */
import type { ParseResult } from "effect"

const MAX_ISSUES = 3
const MAX_MESSAGE = 200

/** Field names compared loosely: `scheduled_for`, `SCHEDULEDFOR` and `scheduledFor` are the same intent. */
const loose = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "")

/** Edit distance, for suggesting the field a misspelt one meant (names are short: 30 characters at most). */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/**
 * An unknown field, Stripe-like: named, with the known field it most likely
 * meant. The schema library lists the known fields in its message
 * (`is unexpected, expected: "to" | "body"`); they are read from there.
 */
const unknownField = (field: string, message: string): string => {
  const name = field.slice(field.lastIndexOf(".") + 1).slice(0, 64)
  const known = [...message.matchAll(/"([^"]+)"/g)].map((match) => match[1] ?? "")
  const meant = known.find((candidate) => loose(candidate) === loose(name)) ??
    known.find((candidate) => name.length > 3 && distance(loose(candidate), loose(name)) <= 2)
  const shown = field.slice(0, 128)
  return meant === undefined ? `${shown}: unknown field` : `${shown}: unknown field; did you mean ${meant}?`
}

/**
 * One readable line per field. The schema library's messages end with the
 * offending value ("…, actual <value>"); that is cut, so a 5,000-character
 * body is never echoed back. An optional field that fails reports twice (its
 * own rule, then "Expected undefined"); only the rule is kept, also when the
 * rule that failed is an inner field's.
 */
export const describeIssues = (issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>): string => {
  const lines = new Map<string, string>()
  const fallback = new Map<string, string>()
  for (const issue of issues) {
    const field = issue.path.map(String).join(".")
    if (issue._tag === "Unexpected" && field !== "") {
      if (!lines.has(field)) lines.set(field, unknownField(field, issue.message))
      continue
    }
    const cut = issue.message.indexOf(", actual ")
    const text = (cut === -1 ? issue.message : issue.message.slice(0, cut)).slice(0, MAX_MESSAGE)
    const line = text.startsWith("Expected Struct") || text.startsWith("Expected {")
      ? (field === "" ? "body: must be a JSON object" : `${field}: must be an object`)
      : (field === "" ? text : `${field}: ${text}`)
    const target = text.startsWith("Expected undefined") ? fallback : lines
    if (!target.has(field)) target.set(field, line)
  }
  // An optional object whose inner field failed reports the object as "Expected undefined" too (`record`
  // beside `record.id`): the inner field's rule says it all.
  const reported = [...lines.keys()]
  for (const [field, line] of fallback) {
    if (!lines.has(field) && !reported.some((other) => other.startsWith(`${field}.`))) lines.set(field, line)
  }
  const all = [...lines.values()]
  const more = all.length > MAX_ISSUES ? ` (and ${all.length - MAX_ISSUES} more)` : ""
  return all.slice(0, MAX_ISSUES).join("; ") + more
}
