/**
 * Migration 0022_media_urls on a database that already holds actions, on the store this run tests: rows
 * stored before it read as no media (`mediaUrls: []`) and keep their body as it was — media URLs appended
 * to it by the Twilio webhook of the time included (the README's "Media" decision) — and new rows keep
 * their media apart.
 */
import { ActionStore } from "@parley/core/domain"
import { Effect, ManagedRuntime, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrations } from "../src/store/migrations.js"
import * as SqlActionStore from "../src/store/SqlActionStore.js"
import { storedText } from "./support/actions.js"
import { onTestDatabase } from "./support/storeLayer.js"
import { createTestDatabase, type TestDatabase } from "./support/store.js"

const ORG = "org_media"
const MEDIA = "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"

describe("migration 0022_media_urls", () => {
  let db: TestDatabase
  const storeOn = (database: TestDatabase) => {
    return ManagedRuntime.make(onTestDatabase(database, SqlActionStore.layer))
  }

  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it("reads rows stored before it as no media, their body unchanged; rows stored after keep media apart", async () => {
    // A database as it was before 0022: migrated, then the column and the migration's record taken away.
    const before = storeOn(db)
    const old = await before.runPromise(Effect.flatMap(ActionStore.ActionStore, (store) =>
      store.insertAction(storedText(ORG, 1, {
        direction: "Inbound",
        status: "Received",
        body: `Look\n${MEDIA}`,
        sid: "MM1",
        sentBy: null,
        apiKeyId: null
      }))))
    await before.dispose()
    await db.query("ALTER TABLE actions DROP COLUMN media_urls")

    // 0022 run again on that database (the migrator runs only what comes after the newest it recorded, and
    // later migrations exist): it adds the column, filled for every existing row.
    const after = storeOn(db)
    try {
      await after.runPromise(migrations["0022_media_urls"])
      const read = await after.runPromise(Effect.flatMap(ActionStore.ActionStore, (store) => store.findAction(ORG, old.id)))
      expect(Option.map(read, (a) => ({ body: a.body, mediaUrls: a.mediaUrls }))).toEqual(
        Option.some({ body: `Look\n${MEDIA}`, mediaUrls: [] })
      )
      const fresh = await after.runPromise(Effect.flatMap(ActionStore.ActionStore, (store) =>
        store.insertAction(storedText(ORG, 2, { direction: "Inbound", status: "Received", body: "", mediaUrls: [MEDIA], sentBy: null }))))
      const again = await after.runPromise(Effect.flatMap(ActionStore.ActionStore, (store) => store.findAction(ORG, fresh.id)))
      expect(Option.map(again, (a) => ({ body: a.body, mediaUrls: a.mediaUrls }))).toEqual(Option.some({ body: "", mediaUrls: [MEDIA] }))
    } finally {
      await after.dispose()
    }
  }, 60_000)
})
