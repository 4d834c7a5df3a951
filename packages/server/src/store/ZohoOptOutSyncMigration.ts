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
  const connected = (row: string) => `EXISTS (SELECT 1 FROM zoho_connections WHERE org_id = ${row}.org_id)`
  const resume = "UPDATE zoho_optout_syncs SET due_at = 0, lease_until = 0 WHERE org_id = NEW.org_id;"
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        // Postgres allows no subquery in a trigger's WHEN: the connection is checked inside the function.
        yield* sql.unsafe(`CREATE FUNCTION zoho_optout_enqueue() RETURNS trigger AS $$
          DECLARE changed RECORD;
          BEGIN
            IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
            IF ${connected("changed")} THEN
              INSERT INTO zoho_optout_syncs (org_id, phone, version, due_at, attempts, lease_until)
              VALUES (changed.org_id, changed.phone, 1, (extract(epoch from clock_timestamp()) * 1000)::bigint, 0, 0)
              ON CONFLICT (org_id, phone) DO UPDATE SET version = zoho_optout_syncs.version + 1, attempts = 0,
                due_at = LEAST(zoho_optout_syncs.due_at, excluded.due_at);
            END IF;
            RETURN NULL;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER opt_outs_zoho_sync AFTER INSERT OR UPDATE OR DELETE ON opt_outs FOR EACH ROW
          EXECUTE FUNCTION zoho_optout_enqueue()`)
        yield* sql.unsafe(`CREATE FUNCTION zoho_optout_resume() RETURNS trigger AS $$
          BEGIN ${resume} RETURN NEW; END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_inserted AFTER INSERT ON zoho_connections FOR EACH ROW
          EXECUTE FUNCTION zoho_optout_resume()`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_updated AFTER UPDATE ON zoho_connections FOR EACH ROW
          WHEN (OLD.connected_at IS DISTINCT FROM NEW.connected_at) EXECUTE FUNCTION zoho_optout_resume()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        const now = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
        for (const [event, row] of [["INSERT", "NEW"], ["UPDATE", "NEW"], ["DELETE", "OLD"]] as const) {
          yield* sql.unsafe(`CREATE TRIGGER opt_outs_zoho_sync_${event.toLowerCase()} AFTER ${event} ON opt_outs
            WHEN ${connected(row)}
            BEGIN
              INSERT INTO zoho_optout_syncs (org_id, phone, version, due_at, attempts, lease_until)
              VALUES (${row}.org_id, ${row}.phone, 1, ${now}, 0, 0)
              ON CONFLICT (org_id, phone) DO UPDATE SET version = version + 1, attempts = 0, due_at = MIN(due_at, excluded.due_at);
            END`)
        }
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_inserted AFTER INSERT ON zoho_connections BEGIN ${resume} END`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_optouts_updated AFTER UPDATE ON zoho_connections
          WHEN OLD.connected_at IS NOT NEW.connected_at BEGIN ${resume} END`)
      })
  })
})
