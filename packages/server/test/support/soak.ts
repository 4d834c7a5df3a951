/**
 * Short runs in `pnpm test`, full ones in `pnpm test:soak` (PARLEY_TEST_SOAK=1): the long soaks — kill -9
 * rounds, fuzz cases, backlogs of due actions — run with the same assertions either way; `pnpm test`
 * keeps enough of each to fail on the same defects (at least 3 kill -9 rounds per provider and store),
 * and CI (.ci/run) runs both, so every guarantee is still proven on every run of CI.
 */
export const soak = process.env["PARLEY_TEST_SOAK"] === "1"

/** `short` in `pnpm test`, `full` in `pnpm test:soak`. */
export const soakSize = (short: number, full: number): number => (soak ? full : short)

/** The pass this process runs, as the root `pnpm test` names it in its summaries. */
export const passName = (): string => {
  const store = process.env["PARLEY_TEST_STORE"] === "postgres" ? "Postgres" : "SQLite"
  return soak ? `${store} soak pass` : `${store} pass`
}
