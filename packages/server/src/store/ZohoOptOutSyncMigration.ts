/**
 * Migration 0047 (issue 32, the CRM's side of consent): the durable outbox of numbers whose Zoho opt-out
 * checkboxes (`Parley_SMS_Opt_Out`, `Parley_Call_Opt_Out` on Leads and Contacts) must be brought in line with
 * Parley's opt-out list.
 *
 * - `zoho_optout_syncs`: one row per organisation and number whose list entry changed since Zoho last saw it.
 *   A trigger on `opt_outs` fills it in the transaction that records or removes the opt-out, whoever does
 *   (a keyword, the carrier, the API, the console, the CLI, a CRM record), so a kill -9 or a Zoho outage
 *   loses nothing; the row says only "this number changed" (`version` counts the changes), and the worker
 *   (crm/zoho/ZohoOptOutSync) writes the number's entry as it is when it runs.
 * - A reconnect (`connected_at` changes) makes the organisation's rows due at once, as for the other outboxes
 *   (migration 0023).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type OptOutTriggers, pgStatements, sqliteStatements } from "./OptOutTriggers.js"

/** A number changed again while queued: counted, its retries start over, due at the earlier of the two times. */
export const zohoOptOutTriggers: OptOutTriggers = {
  table: "zoho_optout_syncs",
  key: "org_id, phone",
  connections: "zoho_connections",
  trigger: "opt_outs_zoho_sync",
  fn: "zoho_optout_enqueue",
  variable: "changed",
  onConflict: {
    pg: () => `version = zoho_optout_syncs.version + 1, attempts = 0,
                due_at = LEAST(zoho_optout_syncs.due_at, excluded.due_at)`,
    sqlite: () => "version = version + 1, attempts = 0, due_at = MIN(due_at, excluded.due_at)"
  }
}

export const zohoOptOutSync = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE zoho_optout_syncs (
    org_id TEXT NOT NULL,
    phone TEXT NOT NULL,
    version INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL,
    PRIMARY KEY (org_id, phone)
  )`
  yield* sql`CREATE INDEX zoho_optout_syncs_due ON zoho_optout_syncs (due_at)`
  const resume = "UPDATE zoho_optout_syncs SET due_at = 0, lease_until = 0 WHERE org_id = NEW.org_id;"
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        // Postgres allows no subquery in a trigger's WHEN: the connection is checked inside the function.
        for (const statement of pgStatements(zohoOptOutTriggers)) yield* sql.unsafe(statement)
        yield* sql.unsafe(`CREATE FUNCTION zoho_optout_resume() RETURNS trigger AS $$
          BEGIN ${resume} RETURN NEW; END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_inserted AFTER INSERT ON zoho_connections FOR EACH ROW
          EXECUTE FUNCTION zoho_optout_resume()`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_updated AFTER UPDATE ON zoho_connections FOR EACH ROW
          WHEN (OLD.connected_at IS DISTINCT FROM NEW.connected_at) EXECUTE FUNCTION zoho_optout_resume()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        for (const statement of sqliteStatements(zohoOptOutTriggers)) yield* sql.unsafe(statement)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_inserted AFTER INSERT ON zoho_connections BEGIN ${resume} END`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_updated AFTER UPDATE ON zoho_connections
          WHEN OLD.connected_at IS NOT NEW.connected_at BEGIN ${resume} END`)
      })
  })
})
