/**
 * What the black-box suites share about the organisation `parley demo` seeds: its numbers as the suites
 * address them, the shapes of the answers they read, and how long a test that sets up through the CLI may take.
 */

/** The demo's first SMS number (its sid, then its phone number). */
export const PN1 = "PN00000000000000000000000000000001"
export const PN1_PHONE = "+14155550100"
/** The demo's second SMS number. */
export const PN2 = "PN00000000000000000000000000000002"
export const PN2_PHONE = "+14155550101"
/** The demo's WhatsApp number. */
export const WA = "PN00000000000000000000000000000003"
export const WA_PHONE = "+14155550199"

/** Each admin CLI call starts a node process (about 2 s, far more on a loaded machine). */
export const CLI_HEAVY = 180_000

/** A page of a list answer (the spec's `{items, nextCursor}`). */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
}

/** What `parley keys create --json` prints. */
export interface CreatedKey {
  readonly key: string
  readonly id: string
}
