/**
 * How long a worker holds the actions it works on. A lease is what lets
 * another process (or the same one restarted) take over the work of a process
 * that died: it lapses, and the next claim takes the row. So it is short, and
 * a worker that needs a row longer (a real provider's request and its
 * reconciliation) renews it while it lives instead of taking a long one: a
 * crash then delays an action by at most LEASE_MS, whatever it was doing.
 */

/**
 * How long a claim (or a renewal) holds a row by default; the README's "picked up within 30 seconds".
 * `PARLEY_DISPATCH_LEASE_MS` sets another (the crash tests shorten it, so as not to wait 30 s a file).
 */
export const LEASE_MS = 30_000

/**
 * How often a live worker renews the leases of the rows it is still working on: a third of the lease, so
 * that two renewals can be late (a slow database, a busy event loop) before the lease lapses under it.
 */
export const renewalEvery = (leaseMs: number): number => leaseMs / 3
