/**
 * The triggers that fill a CRM's opt-out outbox: a change of `opt_outs` (recorded, changed or lifted, by
 * whichever code path) puts the organisation's number in the CRM's outbox `table` in the same transaction,
 * when the organisation is connected to that CRM (a row in `connections`). Migrations 0041 and 0047 build
 * theirs with these; the statements are exactly those the migrations first ran (their text is stored by both
 * databases: Postgres keeps the function's source, SQLite the trigger's), so nothing applied changes.
 *
 * Postgres allows no subquery in a trigger's WHEN: there, the connection is checked inside the function.
 */

/** Now in epoch milliseconds, in each dialect's SQL. */
export const NOW_MS = {
  pg: "(extract(epoch from clock_timestamp()) * 1000)::bigint",
  sqlite: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
} as const

export interface OptOutTriggers {
  /** The outbox, keyed `(org_id, phone)`, or by `action_id` = `org_id || ' ' || phone` (then with both columns too). */
  readonly table: string
  readonly key: "org_id, phone" | "action_id"
  /** The CRM's connections table: only its organisations' changes are queued. */
  readonly connections: string
  /** The trigger's name (SQLite: one per event, suffixed `_insert`, `_update`, `_delete`). */
  readonly trigger: string
  /** Postgres: the trigger function's name, and the name of the record variable it declares. */
  readonly fn: string
  readonly variable: string
  /** What `ON CONFLICT … DO UPDATE SET` does to a number already queued, given now's SQL. */
  readonly onConflict: { readonly pg: (now: string) => string; readonly sqlite: (now: string) => string }
}

const insert = (spec: OptOutTriggers, row: string, now: string) => {
  const keyed = spec.key === "action_id"
  return {
    columns: `${keyed ? "action_id, " : ""}org_id, phone, version, due_at, attempts, lease_until`,
    values: `${keyed ? `${row}.org_id || ' ' || ${row}.phone, ` : ""}${row}.org_id, ${row}.phone, 1, ${now}, 0, 0`
  }
}

/** The Postgres statements: the function, then the trigger. */
export const pgStatements = (spec: OptOutTriggers): ReadonlyArray<string> => {
  const v = spec.variable
  const { columns, values } = insert(spec, v, NOW_MS.pg)
  return [
    `CREATE FUNCTION ${spec.fn}() RETURNS trigger AS $$
          DECLARE ${v} RECORD;
          BEGIN
            IF TG_OP = 'DELETE' THEN ${v} := OLD; ELSE ${v} := NEW; END IF;
            IF EXISTS (SELECT 1 FROM ${spec.connections} WHERE org_id = ${v}.org_id) THEN
              INSERT INTO ${spec.table} (${columns})
              VALUES (${values})
              ON CONFLICT (${spec.key}) DO UPDATE SET ${spec.onConflict.pg(NOW_MS.pg)};
            END IF;
            RETURN NULL;
          END $$ LANGUAGE plpgsql`,
    `CREATE TRIGGER ${spec.trigger} AFTER INSERT OR UPDATE OR DELETE ON opt_outs FOR EACH ROW
          EXECUTE FUNCTION ${spec.fn}()`
  ]
}

/** The SQLite statements: one trigger per event (a deletion's number is the old row's). */
export const sqliteStatements = (spec: OptOutTriggers): ReadonlyArray<string> =>
  ([["INSERT", "NEW"], ["UPDATE", "NEW"], ["DELETE", "OLD"]] as const).map(([event, row]) => {
    const { columns, values } = insert(spec, row, NOW_MS.sqlite)
    return `CREATE TRIGGER ${spec.trigger}_${event.toLowerCase()} AFTER ${event} ON opt_outs
            WHEN EXISTS (SELECT 1 FROM ${spec.connections} WHERE org_id = ${row}.org_id)
            BEGIN
              INSERT INTO ${spec.table} (${columns})
              VALUES (${values})
              ON CONFLICT (${spec.key}) DO UPDATE SET ${spec.onConflict.sqlite(NOW_MS.sqlite)};
            END`
  })
