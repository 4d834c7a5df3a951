/**
 * Versioned schema migrations, run by @effect/sql's Migrator at start-up (and
 * by every CLI command) for SQLite and Postgres alike. The SQL is portable:
 * booleans are 0/1 integers, timestamps ISO text, epoch milliseconds BIGINT,
 * JSON as text. The only dialect difference, the auto-increment key, comes
 * from Dialect.ts.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { autoIncrementKey } from "./Dialect.js"
import { zohoOptOutSync } from "./ZohoOptOutSyncMigration.js"
import { hubspotOutboxes } from "./HubSpotOutboxMigration.js"
import { zohoCallSlots, zohoOutbox, zohoWritebackConnected } from "./ZohoOutboxMigration.js"

const autoId = Effect.map(SqlClient.SqlClient, autoIncrementKey)

const initial = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = yield* autoId
  yield* sql`CREATE TABLE organisations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    subscription_active INTEGER NOT NULL,
    seat_active INTEGER NOT NULL,
    pilot_open INTEGER NOT NULL,
    ai_calls_enabled INTEGER NOT NULL,
    timezone TEXT NOT NULL,
    sending_hours TEXT NOT NULL,
    sms_allowance BIGINT,
    call_allowance BIGINT,
    bots_management_url TEXT,
    templates_management_url TEXT,
    created_at TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE numbers (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    sid TEXT NOT NULL,
    phone_number TEXT NOT NULL,
    friendly_name TEXT NOT NULL,
    sms INTEGER NOT NULL,
    voice INTEGER NOT NULL,
    whatsapp INTEGER NOT NULL,
    voice_outbound_bot_id TEXT,
    PRIMARY KEY (org_id, sid)
  )`
  yield* sql`CREATE TABLE bots (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    active INTEGER NOT NULL,
    direction TEXT NOT NULL,
    PRIMARY KEY (org_id, id)
  )`
  yield* sql`CREATE TABLE crm_connections (
    org_id TEXT PRIMARY KEY REFERENCES organisations(id),
    state TEXT NOT NULL,
    account_id TEXT,
    account_name TEXT,
    permissions TEXT
  )`
  yield* sql`CREATE TABLE templates (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    id TEXT NOT NULL,
    crm_id TEXT NOT NULL,
    record_type TEXT,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (org_id, id)
  )`
  yield* sql`CREATE INDEX templates_by_name ON templates (org_id, name, id)`
  yield* sql`CREATE TABLE crm_records (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    module TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    phone TEXT,
    owner_id TEXT,
    fields TEXT NOT NULL,
    PRIMARY KEY (org_id, module, id)
  )`
  yield* sql`CREATE TABLE actions (
    id ${id},
    org_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    type TEXT NOT NULL,
    direction TEXT NOT NULL,
    status TEXT NOT NULL,
    line TEXT NOT NULL,
    counterpart TEXT NOT NULL,
    from_number_sid TEXT,
    body TEXT NOT NULL,
    bot_id TEXT,
    mode TEXT,
    purpose_message TEXT,
    template_id TEXT,
    wa_content_sid TEXT,
    wa_content_variables TEXT,
    read_at TEXT,
    at TEXT NOT NULL,
    scheduled_for TEXT,
    due_at BIGINT NOT NULL,
    owner_id TEXT,
    owner_name TEXT,
    record_module TEXT,
    record_id TEXT,
    record_name TEXT,
    linked_records TEXT NOT NULL,
    sid TEXT,
    audio_file_id TEXT,
    error_message TEXT,
    sent_by TEXT,
    modified TEXT NOT NULL,
    api_key_id TEXT
  )`
  // Newest-first pages of one organisation's texts or calls (keyset on id).
  yield* sql`CREATE INDEX actions_by_org_kind ON actions (org_id, kind, id)`
  // One conversation's pages, and the WhatsApp session lookup.
  yield* sql`CREATE INDEX actions_by_conversation ON actions (org_id, line, counterpart, id)`
  // The dispatcher's queue: only Queued rows, by due time.
  yield* sql`CREATE INDEX actions_due ON actions (due_at) WHERE status = 'Queued'`
  yield* sql`CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organisations(id),
    name TEXT NOT NULL,
    mode TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    scopes TEXT NOT NULL,
    number_sids TEXT NOT NULL,
    bot_ids TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
  )`
  yield* sql`CREATE INDEX api_keys_by_org ON api_keys (org_id, created_at)`
  yield* sql`CREATE TABLE idempotency_keys (
    key_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    locked_until BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    status INTEGER,
    body TEXT,
    PRIMARY KEY (key_id, idempotency_key)
  )`
  yield* sql`CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)`
  yield* sql`CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    count INTEGER NOT NULL
  )`
  yield* sql`CREATE TABLE events (
    seq ${id},
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    type TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    payload TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX events_by_org ON events (org_id, seq)`
  yield* sql`CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organisations(id),
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL,
    disabled_at TEXT
  )`
  yield* sql`CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  )`
})

/**
 * Dispatch: what the dispatcher needs on each action, and the simulated
 * carrier's record of sends (one row per action: at most one send).
 * - work_at: when the dispatcher should next work on the action (its due
 *   time while Queued, the next lifecycle step after that); NULL when final.
 * - lease_owner / lease_until: the process working on it, until when; a
 *   lease that lapses (the process died) lets another process take over.
 * - charged_at: when the allowance was taken and the send committed to;
 *   from then on the action can no longer be cancelled.
 */
const dispatch = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN work_at BIGINT`
  yield* sql`ALTER TABLE actions ADD COLUMN lease_owner TEXT`
  yield* sql`ALTER TABLE actions ADD COLUMN lease_until BIGINT`
  yield* sql`ALTER TABLE actions ADD COLUMN charged_at BIGINT`
  yield* sql`ALTER TABLE actions ADD COLUMN provider_status TEXT`
  yield* sql`UPDATE actions SET work_at = due_at WHERE status = 'Queued'`
  yield* sql`CREATE INDEX actions_work ON actions (work_at) WHERE work_at IS NOT NULL`
  yield* sql`CREATE TABLE simulated_sends (
    action_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    sid TEXT NOT NULL,
    recipient TEXT NOT NULL,
    status TEXT NOT NULL,
    provider_status TEXT NOT NULL,
    error_message TEXT,
    first_sent_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL
  )`
})

/**
 * Event delivery: one row per (event, endpoint), written in the transaction
 * that writes the event; the delivery worker leases due rows like the
 * dispatcher does. Endpoints keep the previous secret for a day after a
 * rotation (both sign), and say why they were disabled.
 */
const delivery = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT`
  yield* sql`ALTER TABLE webhooks ADD COLUMN previous_secret TEXT`
  yield* sql`ALTER TABLE webhooks ADD COLUMN previous_secret_until BIGINT`
  yield* sql`ALTER TABLE webhooks ADD COLUMN last_success_at TEXT`
  yield* sql`CREATE TABLE webhook_deliveries (
    event_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT,
    state TEXT NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (event_id, webhook_id)
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`
})

/**
 * Conversation pages for restricted callers. Every page is a keyset range scan of an index ending with id
 * (see `SqlActionStore`); without these, a key restricted to numbers, or an account that sees only its own actions,
 * was served by (org_id, kind, id) and filtered row by row: a page for a quiet number read the organisation's
 * whole history (2 s on 1,000,000 messages), and so did a page for an account owning few of them.
 */
const conversationIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX actions_by_line ON actions (org_id, kind, line, id)`
  yield* sql`CREATE INDEX actions_by_owner ON actions (org_id, kind, owner_id, id)`
})

/**
 * Hardening:
 * - a sender number belongs to one organisation (inbound messages are routed by the number alone, so a
 *   number shared by two organisations let one take the other's inbound traffic); a database that already
 *   holds such a number stops here with a message naming it, since only its operator can say whose it is;
 * - a carrier's inbound message is stored once per organisation and carrier id (carriers retry webhooks).
 */
const hardening = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const shared = yield* sql<{ readonly phone_number: string }>`SELECT phone_number FROM numbers
    GROUP BY phone_number HAVING COUNT(*) > 1`
  if (shared.length > 0) {
    return yield* Effect.dieMessage(
      `These numbers are stored more than once: ${shared.map((r) => r.phone_number).join(", ")}. ` +
        "A number can serve only one organisation, once; delete all but its owner's row (DELETE FROM numbers " +
        "WHERE phone_number = '…' AND org_id = '…'), then start again."
    )
  }
  yield* sql`CREATE UNIQUE INDEX numbers_by_phone ON numbers (phone_number)`
  yield* sql`CREATE TABLE inbound_receipts (
    org_id TEXT NOT NULL,
    carrier_sid TEXT NOT NULL,
    action_id TEXT NOT NULL,
    PRIMARY KEY (org_id, carrier_sid)
  )`
})

/**
 * Event filters (issue 13): which event types each endpoint wants, a row per type so that writing an event's
 * deliveries matches them with an indexed lookup on both stores; `*` is every type. Endpoints made before
 * filters existed received everything, and still do. A description says what an endpoint is for.
 */
const webhookEventTypes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN description TEXT`
  yield* sql`CREATE TABLE webhook_event_types (
    webhook_id TEXT NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (webhook_id, type)
  )`
  yield* sql`INSERT INTO webhook_event_types (webhook_id, type) SELECT id, '*' FROM webhooks`
})

/**
 * Real providers (issue 16), chosen per organisation:
 * - provider_accounts: an organisation's Twilio or Vapi account; `secrets` is sealed (SecretBox), the rest
 *   is what `parley providers show` may print;
 * - numbers.provider_ids (JSON array: the Twilio phone number sid and/or the Vapi phone number id),
 *   bots.provider_id (the Vapi assistant id);
 * - provider_submissions: one row per action handed to a real provider, written before each attempt and
 *   given its outcome after it (pending, accepted, not_sent, unknown), so that an attempt whose outcome is
 *   unknown (a crash, a timeout, a 5xx) is reconciled with the provider before anything is sent again.
 */
const providers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE provider_accounts (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    kind TEXT NOT NULL,
    api_base TEXT NOT NULL,
    account_id TEXT,
    secrets TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (org_id, kind)
  )`
  yield* sql`ALTER TABLE numbers ADD COLUMN provider_ids TEXT`
  yield* sql`ALTER TABLE bots ADD COLUMN provider_id TEXT`
  yield* sql`CREATE TABLE provider_submissions (
    action_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    first_attempt_at BIGINT NOT NULL,
    last_attempt_at BIGINT NOT NULL,
    last_outcome TEXT NOT NULL
  )`
  // A provider's id is adopted by one action only (reconciliation checks it).
  yield* sql`CREATE INDEX actions_by_sid ON actions (org_id, sid)`
})

/** The tables SettingsCache serves from memory; a change to any of them bumps `settings_version`. */
export const CACHED_SETTINGS_TABLES = ["api_keys", "organisations", "crm_connections", "numbers", "bots"] as const

/**
 * The version SettingsCache compares on every read. On SQLite triggers keep it, in the transaction that
 * makes the change. An organisation row changes on every text sent when its allowance is counted; a
 * no-op update (an unlimited allowance "taken", the lock-taking `SET id = id`) does not bump it, so the
 * trigger compares every column — generated here from the table as it is now, and the test
 * settings-cache.test.ts fails when a later migration adds a column without recreating it.
 * Postgres keeps the table but no triggers: nothing is cached there.
 */
const settingsVersion = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE settings_version (id INTEGER PRIMARY KEY, value BIGINT NOT NULL)`
  yield* sql`INSERT INTO settings_version (id, value) VALUES (1, 0)`
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        for (const table of CACHED_SETTINGS_TABLES) {
          yield* sql.unsafe(`CREATE TRIGGER ${table}_inserted AFTER INSERT ON ${table} BEGIN ${bump} END`)
          yield* sql.unsafe(`CREATE TRIGGER ${table}_deleted AFTER DELETE ON ${table} BEGIN ${bump} END`)
          const columns = yield* sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})`
          const changed = columns.map(({ name }) => `OLD."${name}" IS NOT NEW."${name}"`).join(" OR ")
          yield* sql.unsafe(`CREATE TRIGGER ${table}_updated AFTER UPDATE ON ${table} WHEN ${changed} BEGIN ${bump} END`)
        }
      }),
    orElse: () => Effect.void
  })
})

/**
 * On SQLite, the trigger that moves the settings version when an organisation's row changes compares every
 * column by name: a migration that adds a column to `organisations` makes it again from the columns there now
 * (Postgres caches no settings and has no such trigger).
 */
const recreateOrganisationsTrigger = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        const columns = yield* sql<{ name: string }>`SELECT name FROM pragma_table_info('organisations')`
        const changed = columns.map(({ name }) => `OLD."${name}" IS NOT NEW."${name}"`).join(" OR ")
        yield* sql.unsafe(`DROP TRIGGER IF EXISTS organisations_updated`)
        yield* sql.unsafe(`CREATE TRIGGER organisations_updated AFTER UPDATE ON organisations WHEN ${changed} BEGIN ${bump} END`)
      }),
    orElse: () => Effect.void
  })
})

/**
 * Abuse limits: per-organisation destination rules (see Destinations) and the per-key limit as a sliding
 * window counted in buckets (see RateLimitStore). On SQLite the settings trigger of `organisations` is made
 * again so that it compares the new columns too.
 */
const abuseLimits = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organisations ADD COLUMN destination_countries TEXT`
  yield* sql`ALTER TABLE organisations ADD COLUMN premium_numbers_allowed INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE organisations ADD COLUMN international_networks_allowed INTEGER NOT NULL DEFAULT 0`
  // Organisations that existed before keep sending where they did: every region, as before the rules.
  yield* sql`UPDATE organisations SET destination_countries = '*'`
  // The per-key limit's sliding window, in buckets (RateLimitStore); `rate_limits` stays for replicas of the
  // release before during a rolling deploy.
  yield* sql`CREATE TABLE rate_limit_buckets (
    key TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (key, bucket)
  )`
  yield* recreateOrganisationsTrigger
})

/**
 * Zoho CRM as an organisation's CRM (issue 25): the connection (sealed tokens, the connected user and
 * organisation, the refresh lease that keeps one refresh at a time per organisation across replicas), the
 * single-use OAuth states, each action's Zoho record id (`crm_id`, the id the API answers; unique per
 * organisation) and the durable write-back outbox (one row per action with changes Zoho has not seen yet).
 */
const zoho = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE zoho_connections (
    org_id TEXT PRIMARY KEY REFERENCES organisations(id),
    zoho_org_id TEXT NOT NULL,
    zoho_org_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    zuid TEXT NOT NULL,
    user_name TEXT NOT NULL,
    email TEXT NOT NULL,
    profile TEXT,
    accounts_url TEXT NOT NULL,
    api_domain TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    access_token TEXT,
    access_expires_at BIGINT NOT NULL,
    refresh_lease_until BIGINT NOT NULL,
    modules TEXT NOT NULL,
    connected_at TEXT NOT NULL,
    last_error TEXT,
    last_error_at TEXT
  )`
  yield* sql`CREATE TABLE zoho_oauth_states (
    state_hash TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organisations(id),
    switch_org INTEGER NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
  )`
  yield* sql`ALTER TABLE actions ADD COLUMN crm_id TEXT`
  yield* sql`CREATE UNIQUE INDEX actions_by_crm_id ON actions (org_id, crm_id)`
  yield* sql`CREATE TABLE zoho_writebacks (
    action_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    lease_until BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX zoho_writebacks_due ON zoho_writebacks (due_at)`
  // Whether an organisation is connected to Zoho is asked on every creation; SettingsCache serves it from
  // memory on SQLite, so connecting and disconnecting bump the settings version (token updates need not).
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_inserted AFTER INSERT ON zoho_connections BEGIN ${bump} END`)
        yield* sql.unsafe(`CREATE TRIGGER zoho_connections_deleted AFTER DELETE ON zoho_connections BEGIN ${bump} END`)
      }),
    orElse: () => Effect.void
  })
  // Every change Zoho must see (status, transcript, recording, provider id, error) enqueues its action in the
  // transaction that stores it, whichever code path stores it: the table is the single place all of them
  // meet. Due two seconds later, so the steps of a lifecycle that follow each other closely go in one write.
  const changed = (old: string, next: string, distinct: string) =>
    ["status", "body", "error_message", "audio_file_id", "sid"].map((c) => `${old}.${c} ${distinct} ${next}.${c}`).join(" OR ")
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE FUNCTION zoho_writeback_enqueue() RETURNS trigger AS $$
          BEGIN
            INSERT INTO zoho_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
            VALUES (NEW.id::text, NEW.org_id, 1, (extract(epoch from clock_timestamp()) * 1000)::bigint + 2000, 0, 0)
            ON CONFLICT (action_id) DO UPDATE SET version = zoho_writebacks.version + 1;
            RETURN NEW;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER actions_zoho_writeback AFTER UPDATE ON actions FOR EACH ROW
          WHEN (NEW.crm_id IS NOT NULL AND (${changed("OLD", "NEW", "IS DISTINCT FROM")}))
          EXECUTE FUNCTION zoho_writeback_enqueue()`)
      }),
    orElse: () =>
      sql.unsafe(`CREATE TRIGGER actions_zoho_writeback AFTER UPDATE ON actions
        WHEN NEW.crm_id IS NOT NULL AND (${changed("OLD", "NEW", "IS NOT")})
        BEGIN
          INSERT INTO zoho_writebacks (action_id, org_id, version, due_at, attempts, lease_until)
          VALUES (CAST(NEW.id AS TEXT), NEW.org_id, 1,
                  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 2000, 0, 0)
          ON CONFLICT (action_id) DO UPDATE SET version = version + 1;
        END`)
  })
})

/**
 * The admin console (issue 26): administrators of one organisation, their sessions and their one-time
 * sign-in links. Passwords are stored as scrypt hashes; session and link tokens as SHA-256 hashes, so a
 * copy of the database signs nobody in.
 */
const adminConsole = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE admins (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organisations(id),
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    link_hash TEXT,
    link_expires_at BIGINT,
    created_at TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX admins_by_org ON admins (org_id, email)`
  yield* sql`CREATE TABLE admin_sessions (
    token_hash TEXT PRIMARY KEY,
    admin_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX admin_sessions_by_admin ON admin_sessions (admin_id)`
})

/**
 * Tracing (observability/TraceLinks): the W3C traceparent of the request that created an action, and of
 * the events about it, so its dispatch and its webhook deliveries — later, maybe in another replica — are
 * children of that request's span. Written only while traces are exported.
 */
const traceLinks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN trace_parent TEXT`
  yield* sql`ALTER TABLE events ADD COLUMN trace_parent TEXT`
})

/** When each API key was last used (KeyUsage), apart from `api_keys` so that noting it bumps no settings version. */
const keyUsage = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE api_key_usage (
    key_id TEXT PRIMARY KEY,
    last_used_at TEXT NOT NULL
  )`
})

/**
 * Allowances per period (AllowancePeriods): `sms_allowance` and `call_allowance` become limits per calendar
 * month in the organisation's time zone, and what was used is counted here, one row per organisation and
 * month. A remaining counter from before becomes the monthly limit, with nothing used yet this month.
 * On SQLite a live creation reads the usage from SettingsCache, so a change to it bumps the settings version
 * as the old counter in `organisations` did: only for an organisation with a finite limit, whose creations
 * read it; counting an unlimited organisation's sends leaves every cached setting in place.
 */
const allowancePeriods = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE allowance_usage (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    period TEXT NOT NULL,
    sms_used BIGINT NOT NULL DEFAULT 0,
    call_used BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, period)
  )`
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        const limited = "EXISTS (SELECT 1 FROM organisations WHERE id = NEW.org_id " +
          "AND (sms_allowance IS NOT NULL OR call_allowance IS NOT NULL))"
        yield* sql.unsafe(`CREATE TRIGGER allowance_usage_inserted AFTER INSERT ON allowance_usage WHEN ${limited} BEGIN ${bump} END`)
        yield* sql.unsafe(`CREATE TRIGGER allowance_usage_updated AFTER UPDATE ON allowance_usage WHEN ${limited} BEGIN ${bump} END`)
      }),
    orElse: () => Effect.void
  })
})

/**
 * The media of inbound messages (MMS, WhatsApp images) in a column of their own, a JSON array of URLs, instead
 * of lines appended to `body`. Every existing row reads as no media: rows stored before keep the URLs in their
 * body, as they were shown and sent in events (telling a media line from a URL someone typed cannot be done
 * from the text alone, and rewriting bodies would also rewrite what a hosted CRM holds).
 */
const mediaUrls = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN media_urls TEXT NOT NULL DEFAULT '[]'`
})

/**
 * Consent: each organisation's opt-out list (the current entry per recipient number) and its history (every
 * entry recorded or removed, kept), and two settings of the organisation: whether a keyword opt-out also
 * stops AI calls (yes by default, see the core's Consent) and its own opt-out words (a JSON array). On SQLite
 * the opt-out list is cached with the settings (the write path checks it for every creation), so its changes
 * bump the settings version, and the organisations trigger is made again to compare the new columns.
 */
const consent = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = yield* autoId
  yield* sql`ALTER TABLE organisations ADD COLUMN calls_follow_opt_outs INTEGER NOT NULL DEFAULT 1`
  yield* sql`ALTER TABLE organisations ADD COLUMN opt_out_words TEXT NOT NULL DEFAULT '[]'`
  yield* sql`CREATE TABLE opt_outs (
    org_id TEXT NOT NULL REFERENCES organisations(id),
    phone TEXT NOT NULL,
    channels TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT,
    cause TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (org_id, phone)
  )`
  yield* sql`CREATE INDEX opt_outs_newest ON opt_outs (org_id, created_at, phone)`
  yield* sql`CREATE TABLE opt_out_history (
    id ${id},
    org_id TEXT NOT NULL REFERENCES organisations(id),
    phone TEXT NOT NULL,
    change TEXT NOT NULL,
    channels TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT,
    cause TEXT,
    at TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX opt_out_history_number ON opt_out_history (org_id, phone, id)`
  yield* recreateOrganisationsTrigger
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        for (const event of ["INSERT", "UPDATE", "DELETE"]) {
          yield* sql.unsafe(`CREATE TRIGGER opt_outs_${event.toLowerCase()} AFTER ${event} ON opt_outs BEGIN ${bump} END`)
        }
      }),
    orElse: () => Effect.void
  })
})

/**
 * Zoho workflow rules (issue 31): whether Parley's writes let an organisation's Zoho workflow rules run
 * (`zoho_settings.workflows`, on unless set off; kept apart from the connection so it survives a reconnect),
 * and which Parley_Messages records already fired them for their final status (a later write-back of the
 * same record, a transcript or a recording, fires nothing again).
 */
const zohoWorkflows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE zoho_settings (
    org_id TEXT PRIMARY KEY REFERENCES organisations(id),
    workflows INTEGER NOT NULL
  )`
  yield* sql`CREATE TABLE zoho_workflow_fired (
    org_id TEXT NOT NULL,
    crm_id TEXT NOT NULL,
    PRIMARY KEY (org_id, crm_id)
  )`
})

/**
 * Zoho connections keep the code of their last error (OAUTH_SCOPE_MISMATCH, INVALID_CLIENT…, shown by `crm
 * status` and the console apart from the words) and when the current user was last read (at least every ten
 * minutes, so a token that now belongs to someone else is caught between refreshes, across replicas).
 */
const zohoConnectionChecks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE zoho_connections ADD COLUMN last_error_code TEXT`
  yield* sql`ALTER TABLE zoho_connections ADD COLUMN identity_checked_at BIGINT NOT NULL DEFAULT 0`
})

/**
 * The time of each rate-limit bucket's latest request, so the oldest bucket stops counting one window after it
 * rather than one window after the bucket ends (RateLimitStore): a refused request never waits longer than the
 * window. 0 marks rows written before (counted whole, as then).
 */
const rateLimitLast = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE rate_limit_buckets ADD COLUMN last_ms BIGINT NOT NULL DEFAULT 0`
})

/**
 * Roles in the console (issue 33): `owner`, `admin` or `viewer` per administrator (admin/Roles.ts). Every
 * administrator from before roles existed could do everything, so each becomes an owner.
 */
const adminRoles = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE admins ADD COLUMN role TEXT NOT NULL DEFAULT 'owner'`
})

/**
 * The audit log (issue 33, admin/AuditLog.ts): who did what in an organisation, when and from where. Append
 * only: the database itself refuses to change an entry, or to delete one less than a year old (366 days), so
 * neither a bug nor a careless statement can rewrite the record; older entries may be pruned by hand.
 * Read newest first, per organisation, optionally per actor or kind, with keyset paging on (at, id).
 */
export const AUDIT_MIN_RETENTION_MS = 366 * 86_400_000
const auditLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT,
    detail TEXT,
    address TEXT
  )`
  yield* sql`CREATE INDEX audit_log_by_org ON audit_log (org_id, at, id)`
  yield* sql`CREATE INDEX audit_log_by_actor ON audit_log (org_id, actor, at, id)`
  yield* sql`CREATE INDEX audit_log_by_kind ON audit_log (org_id, kind, at, id)`
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
          BEGIN
            IF TG_OP = 'UPDATE' OR OLD.at > (extract(epoch from clock_timestamp()) * 1000)::bigint - ${AUDIT_MIN_RETENTION_MS} THEN
              RAISE EXCEPTION 'audit_log is append-only';
            END IF;
            RETURN OLD;
          END $$ LANGUAGE plpgsql`)
        yield* sql.unsafe(`CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
          FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()`)
      }),
    orElse: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
          BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END`)
        yield* sql.unsafe(`CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
          WHEN OLD.at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - ${AUDIT_MIN_RETENTION_MS}
          BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END`)
      })
  })
})

/**
 * The due actions a provider already has (its id recorded: what is left is a recheck or the simulator's next
 * step), in due order: each dispatcher claim reserves a share for them (WorkQueue), found without walking a
 * backlog of sends due before them.
 */
const recheckQueue = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX actions_recheck ON actions (work_at) WHERE work_at IS NOT NULL AND sid IS NOT NULL`
})

/**
 * Recipient-local quiet hours (RecipientHours): a window read on each recipient's clock, null when off. On
 * SQLite the settings trigger of `organisations` is made again so that it compares the new column too.
 */
const recipientHours = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organisations ADD COLUMN recipient_hours TEXT`
  yield* recreateOrganisationsTrigger
})

/**
 * Keyword replies (issue 32): who answers STOP, START and HELP (`keyword_replies`: parley, provider — the
 * default, as the carrier answers on long codes — or off) and the organisation's own texts (null: Consent's
 * defaults); and on each action the inbound message a keyword's answer answers, at most one answer each (the
 * unique index: a second could only come from a bug, and must fail rather than text the recipient twice).
 * On SQLite the organisations trigger is made again to compare the new columns (as in 0035).
 */
const keywordReplies = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organisations ADD COLUMN keyword_replies TEXT NOT NULL DEFAULT 'provider'`
  yield* sql`ALTER TABLE organisations ADD COLUMN help_text TEXT`
  yield* sql`ALTER TABLE organisations ADD COLUMN stop_text TEXT`
  yield* sql`ALTER TABLE organisations ADD COLUMN start_text TEXT`
  yield* sql`ALTER TABLE actions ADD COLUMN keyword_reply_to TEXT`
  yield* sql`CREATE UNIQUE INDEX actions_keyword_reply ON actions (org_id, keyword_reply_to) WHERE keyword_reply_to IS NOT NULL`
  yield* recreateOrganisationsTrigger
})

/**
 * The console's pages at any history size (issue 33): a record's own events found by the record id their
 * payload carries (`data.id`), however old, instead of among the organisation's latest 1,000 events. An
 * expression index over the payload (the same expression in `admin/RecordEvents.ts`), so no writer of
 * events changes. (An endpoint's deliveries are paged by walking `events_by_org` backwards and probing the
 * deliveries' primary key: no index needed there.)
 */
const consolePages = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE INDEX events_by_record ON events (org_id, ((payload::jsonb -> 'data') ->> 'id'), seq)`,
    orElse: () => sql`CREATE INDEX events_by_record ON events (org_id, json_extract(payload, '$.data.id'), seq)`
  })
})

/**
 * HubSpot as an organisation's CRM (issue 34): the connection (sealed tokens, the connected user and portal,
 * the refresh lease that keeps one refresh at a time per organisation across replicas) and the single-use
 * install states. Connecting and disconnecting bump the settings version on SQLite, as for the other CRM.
 */
const hubspot = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE hubspot_connections (
    org_id TEXT PRIMARY KEY REFERENCES organisations(id),
    hub_id TEXT NOT NULL,
    hub_domain TEXT NOT NULL,
    user_id TEXT NOT NULL,
    email TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    access_token TEXT,
    access_expires_at BIGINT NOT NULL,
    refresh_lease_until BIGINT NOT NULL,
    scopes TEXT NOT NULL,
    connected_at TEXT NOT NULL,
    last_error TEXT,
    last_error_at TEXT,
    last_error_code TEXT
  )`
  yield* sql`CREATE TABLE hubspot_oauth_states (
    state_hash TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organisations(id),
    switch_org INTEGER NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
  )`
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        const bump = "UPDATE settings_version SET value = value + 1 WHERE id = 1;"
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_inserted AFTER INSERT ON hubspot_connections BEGIN ${bump} END`)
        yield* sql.unsafe(`CREATE TRIGGER hubspot_connections_deleted AFTER DELETE ON hubspot_connections BEGIN ${bump} END`)
      }),
    orElse: () => Effect.void
  })
})

/**
 * Allowance usage leaves the settings version (issue 36): 0021's triggers moved it with every text an
 * organisation with a finite allowance sent, which emptied the SQLite settings cache (keys, numbers,
 * organisations) after every send. Usage is read by its primary key where it is needed instead.
 */
const allowanceUsageUncached = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    sqlite: () =>
      Effect.gen(function*() {
        yield* sql.unsafe(`DROP TRIGGER IF EXISTS allowance_usage_inserted`)
        yield* sql.unsafe(`DROP TRIGGER IF EXISTS allowance_usage_updated`)
      }),
    orElse: () => Effect.void
  })
})

/**
 * Two-factor sign-in for the console (issue 33, admin/TwoFactorStore.ts): each administrator's TOTP secret
 * (sealed with SecretBox; a second column holds one being set up, not yet confirmed) and the last time step
 * used (a code is accepted once); their recovery codes, hashed, each used once; the sign-ins waiting for
 * their second step (a token of their own, never a session); and each organisation's policy requiring it.
 */
const twoFactor = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE admins ADD COLUMN totp_secret TEXT`
  yield* sql`ALTER TABLE admins ADD COLUMN totp_pending_secret TEXT`
  yield* sql`ALTER TABLE admins ADD COLUMN totp_enrolled_at TEXT`
  yield* sql`ALTER TABLE admins ADD COLUMN totp_last_step BIGINT`
  yield* sql`CREATE TABLE admin_recovery_codes (
    admin_id TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    used_at BIGINT,
    PRIMARY KEY (admin_id, code_hash)
  )`
  yield* sql`CREATE TABLE admin_sign_in_steps (
    token_hash TEXT PRIMARY KEY,
    admin_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX admin_sign_in_steps_by_admin ON admin_sign_in_steps (admin_id)`
  yield* sql`CREATE TABLE admin_policies (
    org_id TEXT PRIMARY KEY REFERENCES organisations(id),
    require_two_factor INTEGER NOT NULL,
    changed_at TEXT NOT NULL
  )`
})

/**
 * The console's Usage page (issue 33, item 11): the last 30 days of an organisation's texts and calls counted
 * by channel and status, read from this index alone (it covers every column the count reads), a range of the
 * organisation's creation times instead of a scan of all its actions.
 */
const usageCounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX actions_by_org_at ON actions (org_id, at, type, status)`
})

export const migrations = {
  "0001_initial": initial,
  "0002_dispatch": dispatch,
  "0003_delivery": delivery,
  "0004_conversation_indexes": conversationIndexes,
  "0005_hardening": hardening,
  "0006_webhook_event_types": webhookEventTypes,
  "0007_providers": providers,
  "0008_settings_version": settingsVersion,
  "0011_abuse_limits": abuseLimits,
  "0013_zoho": zoho,
  "0014_admin_console": adminConsole,
  "0015_trace_links": traceLinks,
  "0016_key_usage": keyUsage,
  "0021_allowance_periods": allowancePeriods,
  "0022_media_urls": mediaUrls,
  "0023_zoho_outbox": zohoOutbox,
  "0024_zoho_call_slots": zohoCallSlots,
  "0026_zoho_connection_checks": zohoConnectionChecks,
  "0028_zoho_workflows": zohoWorkflows,
  "0033_rate_limit_last": rateLimitLast,
  "0035_consent": consent,
  "0036_keyword_replies": keywordReplies,
  "0037_recipient_hours": recipientHours,
  "0038_recheck_queue": recheckQueue,
  "0040_hubspot": hubspot,
  "0041_hubspot_outboxes": hubspotOutboxes,
  "0042_admin_roles": adminRoles,
  "0043_audit_log": auditLog,
  "0044_console_pages": consolePages,
  "0045_allowance_usage_uncached": allowanceUsageUncached,
  "0046_zoho_writeback_connected": zohoWritebackConnected,
  "0047_zoho_opt_out_sync": zohoOptOutSync,
  "0048_two_factor": twoFactor,
  "0052_usage_counts": usageCounts
}
