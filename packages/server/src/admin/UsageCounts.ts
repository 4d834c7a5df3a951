/**
 * The Usage page's counts: an organisation's texts and calls created in the last 30 days, by channel (SMS,
 * WhatsApp, Call) and status. One grouped count over the covering index `actions_by_org_at` (migration
 * 0052): a range of the organisation's creation times, read from the index alone, so the page stays fast
 * at any history size (tested with 10,000 records in admin-console-usage-browser.test.ts).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { DbInt, storage } from "../store/rows.js"

/** The window the page counts over. */
export const USAGE_DAYS = 30

const CountRow = Schema.Struct({ type: Schema.String, status: Schema.String, n: DbInt })

export interface UsageCount {
  /** SMS, WhatsApp or Call, as the API names a record's type. */
  readonly type: string
  readonly status: string
  readonly count: number
}

export interface RecentUsage {
  /** The window's start (ISO): now less USAGE_DAYS days. */
  readonly since: string
  readonly counts: ReadonlyArray<UsageCount>
}

export const recentUsage = (orgId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    // `at` is an ISO instant written by toISOString (Actions): text order is time order.
    const since = new Date(now - USAGE_DAYS * 24 * 60 * 60 * 1000).toISOString()
    const rows = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: CountRow,
      execute: () =>
        sql`SELECT type, status, COUNT(*) AS n FROM actions WHERE org_id = ${orgId} AND at >= ${since}
            GROUP BY type, status`
    })(undefined)
    const usage: RecentUsage = { since, counts: rows.map((r) => ({ type: r.type, status: r.status, count: r.n })) }
    return usage
  }).pipe(storage("console.recentUsage"))
