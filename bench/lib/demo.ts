/** The demo organisation the scenarios run as (`parley demo`), and what seeding needs to know of it. */
import { join } from "node:path"
import Database from "better-sqlite3"
import { DB_FILE, type OrgContext } from "./seed.js"

export interface DemoSummary {
  readonly orgId: string
  readonly numbers: ReadonlyArray<{ readonly sid: string; readonly phoneNumber: string }>
  readonly keys: { readonly test: string; readonly live: string }
}

/** The demo organisation's lines, live key and CRM owner, read from its data directory. */
export const orgContext = (dir: string, demo: DemoSummary): OrgContext => {
  const db = new Database(join(dir, DB_FILE), { readonly: true })
  try {
    const key = db.prepare("SELECT id FROM api_keys WHERE org_id = ? AND mode = 'live' ORDER BY created_at DESC LIMIT 1")
      .get(demo.orgId) as { id: string } | undefined
    const crm = db.prepare("SELECT account_id, account_name FROM crm_connections WHERE org_id = ? AND state = 'connected'")
      .get(demo.orgId) as { account_id: string | null; account_name: string | null } | undefined
    if (key === undefined) throw new Error("the demo org has no live key")
    return {
      orgId: demo.orgId,
      lines: demo.numbers.map((n) => ({ sid: n.sid, phoneNumber: n.phoneNumber })),
      ownerId: crm?.account_id ?? null,
      ownerName: crm?.account_name ?? null,
      keyId: key.id
    }
  } finally {
    db.close()
  }
}
