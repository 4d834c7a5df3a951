/**
 * Migration 0041 (issue 34): HubSpot's durable outboxes, filled by triggers in the transaction of the change
 * they carry — whichever code path makes it — so a kill -9 loses nothing, and drained by crm/hubspot's loops
 * through the shared crm/Outbox:
 *
 * - `hubspot_writebacks`: an action of a HubSpot-connected organisation with a HubSpot object (`crm_id`) whose
 *   status, body (a call's transcript), error, recording or provider id changed; due two seconds later, so the
 *   steps of a lifecycle that follow each other closely go in one batch. `version` counts changes, so a row that
 *   changed while its write was in flight stays due.
 * - `hubspot_call_starts`: when each AI call went In Progress (its `modified`), so that its final write-back
 *   carries the call's duration (Parley's own status times: answered to ended).
 * - `hubspot_inbound`: an inbound text stored without its HubSpot communication (HubSpot failed, throttled, had
 *   lapsed or was slow when it arrived).
 * - `hubspot_opt_outs`: a number whose opt-out changed (recorded, changed or lifted), keyed `org_id phone`; the
 *   loop sets or clears `parley_sms_opt_out` on the contacts with that phone.
 * - A (re)connection (`connected_at` changes) makes every row of the organisation due at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type OptOutTriggers, pgStatements, sqliteStatements } from "./OptOutTriggers.js"

/** A number changed again while queued: counted, due at once, its lease released. */
export const hubspotOptOutTriggers: OptOutTriggers = {
  table: "hubspot_opt_outs",
  key: "action_id",
  connections: "hubspot_connections",
  trigger: "opt_outs_hubspot",
  fn: "hubspot_opt_out_enqueue",
  variable: "entry",
  onConflict: {
    pg: (now) => `version = hubspot_opt_outs.version + 1, due_at = ${now}, lease_until = 0`,
    sqlite: (now) => `version = version + 1, due_at = ${now}, lease_until = 0`
  }
}

export const hubspotOutboxes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE hubspot_writebacks (
    action_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX hubspot_writebacks_due ON hubspot_writebacks (due_at)`
  yield* sql`CREATE TABLE hubspot_call_starts (
    action_id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE hubspot_inbound (
    action_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX hubspot_inbound_due ON hubspot_inbound (due_at)`
  yield* sql`CREATE TABLE hubspot_opt_outs (
    action_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    phone TEXT NOT NULL,
    version INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX hubspot_opt_outs_due ON hubspot_opt_outs (due_at)`

  const connected = (row: string) => `EXISTS (SELECT 1 FROM hubspot_connections WHERE org_id = ${row}.org_id)`
  const changed = (distinct: string) =>
    ["status", "body", "error_message", "audio_file_id", "sid"].map((c) => `OLD.${c} ${distinct} NEW.${c}`).join(" OR ")
  const started = (distinct: string) => `NEW.kind = 'ai_call' AND NEW.status = 'In Progress' AND OLD.status ${distinct} 'In Progress'`
  const inboundWithout = "NEW.direction = 'Inbound' AND NEW.crm_id IS NULL"
  const resume = ["hubspot_writebacks", "hubspot_inbound", "hubspot_opt_outs"]
    .map((table) => `UPDATE ${table} SET due_at = 0, lease_until = 0 WHERE org_id = NEW.org_id;`).join(" ")

  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        const nowMs = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
        // Postgres allows no subquery in a trigger's WHEN: the connection is checked inside each function.
        yield* sql.unsafe(`CREATE FUNCTION hubspot_writeback_enqueue() RETURNS trigger AS $$
          BEGIN
            IF ${connected("NEW")} THEN
              INSERT INTO hubspot_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
              VALUES (NEW.id::text, NEW.org_id, 1, ${nowMs} + 2000, 0, 0)
              ON CONFLICT (action_id) DO UPDATE SET version = hubspot_writebacks.version + 1;
              IF ${started("IS DISTINCT FROM")} THEN
                INSERT INTO hubspot_call_starts (action_id, started_at) VALUES (NEW.id::text, NEW.modified)
                ON CONFLICT (action_id) DO NOTHING;
              END IF;
            END IF;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER actions_hubspot_writeback AFTER UPDATE ON actions FOR EACH ROW
          WHEN (NEW.crm_id IS NOT NULL AND (${changed("IS DISTINCT FROM")}))
          EXECUTE FUNCTION hubspot_writeback_enqueue()`)
        yield* sql.unsafe(`CREATE FUNCTION hubspot_inbound_enqueue() RETURNS trigger AS $$
          BEGIN
            IF ${connected("NEW")} THEN
              INSERT INTO hubspot_inbound (action_id, org_id, due_at, attempts, lease_until)
              VALUES (NEW.id::text, NEW.org_id, ${nowMs}, 0, 0)
              ON CONFLICT (action_id) DO NOTHING;
            END IF;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER actions_hubspot_inbound AFTER INSERT ON actions FOR EACH ROW
          WHEN (${inboundWithout}) EXECUTE FUNCTION hubspot_inbound_enqueue()`)
        for (const statement of pgStatements(hubspotOptOutTriggers)) yield* sql.unsafe(statement)
        yield* sql.unsafe(`CREATE FUNCTION hubspot_outbox_resume() RETURNS trigger AS $$
          BEGIN ${resume} RETURN NEW; END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_resume_inserted AFTER INSERT ON hubspot_connections FOR EACH ROW
          EXECUTE FUNCTION hubspot_outbox_resume()`)
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_resume_updated AFTER UPDATE ON hubspot_connections FOR EACH ROW
          WHEN (OLD.connected_at IS DISTINCT FROM NEW.connected_at) EXECUTE FUNCTION hubspot_outbox_resume()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        const nowMs = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
        yield* sql.unsafe(`CREATE TRIGGER actions_hubspot_writeback AFTER UPDATE ON actions
          WHEN NEW.crm_id IS NOT NULL AND (${changed("IS NOT")}) AND ${connected("NEW")}
          BEGIN
            INSERT INTO hubspot_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
            VALUES (CAST(NEW.id AS TEXT), NEW.org_id, 1, ${nowMs} + 2000, 0, 0)
            ON CONFLICT (action_id) DO UPDATE SET version = version + 1;
            INSERT INTO hubspot_call_starts (action_id, started_at)
            SELECT CAST(NEW.id AS TEXT), NEW.modified WHERE ${started("IS NOT")}
            ON CONFLICT (action_id) DO NOTHING;
          END`)
        yield* sql.unsafe(`CREATE TRIGGER actions_hubspot_inbound AFTER INSERT ON actions
          WHEN ${inboundWithout} AND ${connected("NEW")}
          BEGIN
            INSERT INTO hubspot_inbound (action_id, org_id, due_at, attempts, lease_until)
            VALUES (CAST(NEW.id AS TEXT), NEW.org_id, ${nowMs}, 0, 0)
            ON CONFLICT (action_id) DO NOTHING;
          END`)
        for (const statement of sqliteStatements(hubspotOptOutTriggers)) yield* sql.unsafe(statement)
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_resume_inserted AFTER INSERT ON hubspot_connections BEGIN ${resume} END`)
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_resume_updated AFTER UPDATE ON hubspot_connections
          WHEN OLD.connected_at IS NOT NEW.connected_at BEGIN ${resume} END`)
      })
  })
})
