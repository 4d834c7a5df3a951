/**
 * The opt-out triggers of migrations 0041 (HubSpot) and 0047 (Zoho) are built by one helper
 * (store/OptOutTriggers); both databases keep the text of what a migration created (Postgres the function's
 * source, SQLite the trigger's), so the helper must give exactly the statements the migrations first ran.
 * The expected statements are the migrations' own code before the helper, kept here verbatim.
 */
import { describe, expect, it } from "vitest"
import { hubspotOptOutTriggers } from "../src/store/HubSpotOutboxMigration.js"
import { pgStatements, sqliteStatements } from "../src/store/OptOutTriggers.js"
import { zohoOptOutTriggers } from "../src/store/ZohoOptOutSyncMigration.js"

const EVENTS = [["INSERT", "NEW"], ["UPDATE", "NEW"], ["DELETE", "OLD"]] as const

describe("opt-out triggers: the statements migrations 0041 and 0047 ran, unchanged", () => {
  it("Zoho's (0047), on Postgres and SQLite", () => {
    const connected = (row: string) => `EXISTS (SELECT 1 FROM zoho_connections WHERE org_id = ${row}.org_id)`
    expect(pgStatements(zohoOptOutTriggers)).toEqual([
      `CREATE FUNCTION zoho_optout_enqueue() RETURNS trigger AS $$
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
          END $$ LANGUAGE plpgsql`,
      `CREATE TRIGGER opt_outs_zoho_sync AFTER INSERT OR UPDATE OR DELETE ON opt_outs FOR EACH ROW
          EXECUTE FUNCTION zoho_optout_enqueue()`
    ])
    const now = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    expect(sqliteStatements(zohoOptOutTriggers)).toEqual(EVENTS.map(([event, row]) =>
      `CREATE TRIGGER opt_outs_zoho_sync_${event.toLowerCase()} AFTER ${event} ON opt_outs
            WHEN ${connected(row)}
            BEGIN
              INSERT INTO zoho_optout_syncs (org_id, phone, version, due_at, attempts, lease_until)
              VALUES (${row}.org_id, ${row}.phone, 1, ${now}, 0, 0)
              ON CONFLICT (org_id, phone) DO UPDATE SET version = version + 1, attempts = 0, due_at = MIN(due_at, excluded.due_at);
            END`
    ))
  })

  it("HubSpot's (0041), on Postgres and SQLite", () => {
    const connected = (row: string) => `EXISTS (SELECT 1 FROM hubspot_connections WHERE org_id = ${row}.org_id)`
    const pgNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    expect(pgStatements(hubspotOptOutTriggers)).toEqual([
      `CREATE FUNCTION hubspot_opt_out_enqueue() RETURNS trigger AS $$
          DECLARE entry RECORD;
          BEGIN
            IF TG_OP = 'DELETE' THEN entry := OLD; ELSE entry := NEW; END IF;
            IF EXISTS (SELECT 1 FROM hubspot_connections WHERE org_id = entry.org_id) THEN
              INSERT INTO hubspot_opt_outs (action_id, org_id, phone, version, due_at, attempts, lease_until)
              VALUES (entry.org_id || ' ' || entry.phone, entry.org_id, entry.phone, 1, ${pgNow}, 0, 0)
              ON CONFLICT (action_id) DO UPDATE SET version = hubspot_opt_outs.version + 1, due_at = ${pgNow}, lease_until = 0;
            END IF;
            RETURN NULL;
          END $$ LANGUAGE plpgsql`,
      `CREATE TRIGGER opt_outs_hubspot AFTER INSERT OR UPDATE OR DELETE ON opt_outs FOR EACH ROW
          EXECUTE FUNCTION hubspot_opt_out_enqueue()`
    ])
    const nowMs = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    expect(sqliteStatements(hubspotOptOutTriggers)).toEqual(EVENTS.map(([event, row]) =>
      `CREATE TRIGGER opt_outs_hubspot_${event.toLowerCase()} AFTER ${event} ON opt_outs
            WHEN ${connected(row)}
            BEGIN
              INSERT INTO hubspot_opt_outs (action_id, org_id, phone, version, due_at, attempts, lease_until)
              VALUES (${row}.org_id || ' ' || ${row}.phone, ${row}.org_id, ${row}.phone, 1, ${nowMs}, 0, 0)
              ON CONFLICT (action_id) DO UPDATE SET version = version + 1, due_at = ${nowMs}, lease_until = 0;
            END`
    ))
  })
})
