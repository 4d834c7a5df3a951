/**
 * Migration 0023 (issue 31, "nothing lost"): the durable outbox of inbound texts whose Zoho record is still
 * owed, and the triggers that keep both Zoho outboxes moving.
 *
 * - `zoho_inbound`: one row per inbound text stored without its Zoho record (Zoho failed, throttled, had
 *   lapsed or was slow when it arrived). A trigger fills it in the transaction that stores the text, whichever
 *   code path stores it, exactly as `zoho_writebacks` is filled (migration 0013); the shared crm/InboundRecords empties it.
 * - A reconnect (a new or re-made `zoho_connections` row: `connected_at` changes) makes every row of that
 *   organisation in both outboxes due at once, so what waited through an OAUTH_REQUIRED night goes out at
 *   the next round instead of at the end of its backoff.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export const zohoOutbox = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE zoho_inbound (
    action_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX zoho_inbound_due ON zoho_inbound (due_at)`
  const inboundWithout = "NEW.direction = 'Inbound' AND NEW.crm_id IS NULL"
  const connected = "EXISTS (SELECT 1 FROM zoho_connections WHERE org_id = NEW.org_id)"
  // Postgres allows no subquery in a trigger's WHEN: the connection is checked inside its function.
  const owed = `${inboundWithout} AND ${connected}`
  const resume = "UPDATE zoho_writebacks SET due_at = 0, lease_until = 0 WHERE org_id = NEW.org_id; " +
    "UPDATE zoho_inbound SET due_at = 0, lease_until = 0 WHERE org_id = NEW.org_id;"
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE FUNCTION zoho_inbound_enqueue() RETURNS trigger AS $$
          BEGIN
            IF ${connected} THEN
              INSERT INTO zoho_inbound (action_id, org_id, due_at, attempts, lease_until)
              VALUES (NEW.id::text, NEW.org_id, (extract(epoch from clock_timestamp()) * 1000)::bigint, 0, 0)
              ON CONFLICT (action_id) DO NOTHING;
            END IF;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER actions_zoho_inbound AFTER INSERT ON actions FOR EACH ROW
          WHEN (${inboundWithout}) EXECUTE FUNCTION zoho_inbound_enqueue()`)
        yield* sql.unsafe(`CREATE FUNCTION zoho_outbox_resume() RETURNS trigger AS $$
          BEGIN ${resume} RETURN NEW; END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_inserted AFTER INSERT ON zoho_connections FOR EACH ROW
          EXECUTE FUNCTION zoho_outbox_resume()`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_updated AFTER UPDATE ON zoho_connections FOR EACH ROW
          WHEN (OLD.connected_at IS DISTINCT FROM NEW.connected_at) EXECUTE FUNCTION zoho_outbox_resume()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE TRIGGER actions_zoho_inbound AFTER INSERT ON actions WHEN ${owed}
          BEGIN
            INSERT INTO zoho_inbound (action_id, org_id, due_at, attempts, lease_until)
            VALUES (CAST(NEW.id AS TEXT), NEW.org_id, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 0, 0)
            ON CONFLICT (action_id) DO NOTHING;
          END`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_inserted AFTER INSERT ON zoho_connections BEGIN ${resume} END`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_resume_updated AFTER UPDATE ON zoho_connections
          WHEN OLD.connected_at IS NOT NEW.connected_at BEGIN ${resume} END`)
      })
  })
})

/**
 * Migration 0024: the shared slots of Zoho's concurrency cap (ZohoCallSlots), one row per organisation and
 * slot, leased by a call in flight. Used on Postgres, where replicas share them.
 */
export const zohoCallSlots = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE zoho_call_slots (
    org_id TEXT NOT NULL,
    slot INTEGER NOT NULL,
    holder TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    PRIMARY KEY (org_id, slot)
  )`
})

/**
 * Zoho's write-back trigger (migration 0013) queued every action with a CRM id, whichever CRM gave it the id:
 * a HubSpot organisation's changes filled `zoho_writebacks` and waited there for ever (retried every 15
 * minutes, never sent). Now it queues an action only for an organisation connected to Zoho (as HubSpot's own
 * outbox does, migration 0041), and the rows of organisations with no Zoho connection are dropped: nothing of
 * theirs could ever be written to Zoho. (A Zoho connection that lapsed keeps its row: its rows stay.)
 */
export const zohoWritebackConnected = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const connected = "EXISTS (SELECT 1 FROM zoho_connections WHERE org_id = NEW.org_id)"
  const changed = (distinct: string) =>
    ["status", "body", "error_message", "audio_file_id", "sid"].map((c) => `OLD.${c} ${distinct} NEW.${c}`).join(" OR ")
  yield* sql`DELETE FROM zoho_writebacks WHERE org_id NOT IN (SELECT org_id FROM zoho_connections)`
  yield* sql.onDialectOrElse({
    pg: () =>
      // Postgres allows no subquery in a trigger's WHEN: the connection is checked inside the function.
      sql.unsafe(`CREATE OR REPLACE FUNCTION zoho_writeback_enqueue() RETURNS trigger AS $$
          BEGIN
            IF ${connected} THEN
              INSERT INTO zoho_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
              VALUES (NEW.id::text, NEW.org_id, 1, (extract(epoch from clock_timestamp()) * 1000)::bigint + 2000, 0, 0)
              ON CONFLICT (action_id) DO UPDATE SET version = zoho_writebacks.version + 1;
            END IF;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql`DROP TRIGGER actions_zoho_writeback`
        yield* sql.unsafe(`CREATE TRIGGER actions_zoho_writeback AFTER UPDATE ON actions
          WHEN NEW.crm_id IS NOT NULL AND (${changed("IS NOT")}) AND ${connected}
          BEGIN
            INSERT INTO zoho_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
            VALUES (CAST(NEW.id AS TEXT), NEW.org_id, 1,
                    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 2000, 0, 0)
            ON CONFLICT (action_id) DO UPDATE SET version = version + 1;
          END`)
      })
  })
})
