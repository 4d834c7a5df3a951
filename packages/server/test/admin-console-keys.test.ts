/**
 * Developer access over HTTP, on both stores (issue 33, items 10 and 13): rolling a key (console and
 * `parley keys roll`) — the new secret shown once, the old one working for the overlap and refused (401, the
 * contract's error) once it has passed, even while the key sits in the SQLite settings cache; renaming with
 * a length limit; the create form answered with a redirect, so a reload never makes a second key; every
 * change in the audit log without a secret; and `pnpm start` (`serve --demo`) run twice on the same data
 * leaving two active demo keys, not four.
 */
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addAdmin, consoleGet, consolePost, type ConsoleSession, signIn } from "./support/console.js"
import { freePort, type DemoSummary, TestServer } from "./support/server.js"
import { createTestDatabase } from "./support/store.js"
import { join } from "node:path"

const PASSWORD = "a long passphrase for keys"
const BIN = join(import.meta.dirname, "..", "bin", "parley.mjs")

interface CreatedKey {
  readonly id: string
  readonly key: string
}

interface AuditItem {
  readonly actor: string
  readonly kind: string
  readonly subject: string | null
  readonly detail: string | null
}

describe("Developer access: roll, rename, create once", () => {
  let server: TestServer
  let demo: DemoSummary
  let owner: ConsoleSession

  const newKey = (name: string) =>
    server.adminJson<CreatedKey>(["keys", "create", "--org", demo.orgId, "--name", name, "--scopes", "all", "--mode", "live"])

  const status = async (key: string) => (await server.fetch("/api/v1/numbers", { key })).status

  const activeKeys = async () =>
    (await server.adminJson<{ items: ReadonlyArray<{ id: string; status: string }> }>(["keys", "list", "--org", demo.orgId]))
      .items.filter((k) => k.status === "active").length

  const audit = () => server.adminJson<{ items: ReadonlyArray<AuditItem> }>(["audit", "--org", demo.orgId, "--limit", "500"])

  beforeAll(async () => {
    server = await TestServer.start()
    demo = await server.demo()
    await addAdmin(server, demo.orgId, "kim@keys.example", PASSWORD)
    owner = await signIn(server.baseUrl, "kim@keys.example", PASSWORD)
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
  })

  it("rolls a key with a 1 hour overlap: the new secret shown once, the old one works until its expiry, then 401 even when cached", async () => {
    const old = await newKey("rolled in the console")
    expect(await status(old.key)).toBe(200)
    const rolled = await consolePost(server.baseUrl, owner, "/admin/keys/roll", { csrf: owner.csrf, id: old.id, overlap: "1h" })
    expect(rolled.status).toBe(303)
    const location = rolled.headers.get("location") ?? ""
    expect(location).toMatch(/^\/admin\/keys\/created\?ticket=[\w-]+$/)
    const shown = await (await consoleGet(server.baseUrl, owner, location)).text()
    const token = /(parley_live_\w+)/.exec(shown)?.[1] ?? ""
    expect(token).not.toBe("")
    expect(token).not.toBe(old.key)
    expect(shown).toContain("Key rolled")
    expect(shown).toContain("The old secret works until")
    // Shown once: the same address again holds no secret.
    const again = await (await consoleGet(server.baseUrl, owner, location)).text()
    expect(again).toContain("Key already shown")
    expect(again).not.toMatch(/parley_live_/)

    expect(await status(token)).toBe(200)
    expect(await status(old.key)).toBe(200)
    const keys = await server.adminJson<{ items: ReadonlyArray<{ id: string; name: string; expiresAt: string | null; scopes: ReadonlyArray<string> }> }>(
      ["keys", "list", "--org", demo.orgId]
    )
    const before = keys.items.find((k) => k.id === old.id)
    const successor = keys.items.filter((k) => k.name === "rolled in the console" && k.id !== old.id)
    expect(successor).toHaveLength(1)
    expect(successor[0]?.expiresAt).toBeNull()
    expect(successor[0]?.scopes).toEqual(before?.scopes)
    const expiresIn = Date.parse(before?.expiresAt ?? "") - Date.now()
    expect(expiresIn).toBeGreaterThan(59 * 60_000)
    expect(expiresIn).toBeLessThanOrEqual(60 * 60_000)

    // The overlap running out, without waiting an hour: the expiry brought to 1.5 s from now. The request
    // right after it reads the key (into the settings cache on SQLite); the one after the expiry must be
    // refused from that same cached row, with nothing changed in between.
    await server.db.query("UPDATE api_keys SET expires_at = ? WHERE id = ?", [new Date(Date.now() + 1_500).toISOString(), old.id])
    expect(await status(old.key)).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const refused = await server.fetch("/api/v1/numbers", { key: old.key })
    expect(refused.status).toBe(401)
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe("UNAUTHORIZED")
    expect(body.error.message).toContain("expired")
    expect(await status(token)).toBe(200)

    const entries = (await audit()).items
    const entry = entries.find((e) => e.kind === "key.rolled" && e.subject === old.id)
    expect(entry?.actor).toBe("kim@keys.example")
    expect(entry?.detail).toContain("overlap=1h")
    expect(JSON.stringify(entries)).not.toMatch(/parley_(live|test)_/)
  })

  it("rolls with overlap Now: the old key is refused at once; a revoked key cannot be rolled; an unknown overlap is refused", async () => {
    const old = await newKey("rolled now")
    const rolled = await consolePost(server.baseUrl, owner, "/admin/keys/roll", { csrf: owner.csrf, id: old.id, overlap: "now" })
    expect(rolled.status).toBe(303)
    const token = /(parley_live_\w+)/.exec(await (await consoleGet(server.baseUrl, owner, rolled.headers.get("location") ?? "")).text())?.[1] ?? ""
    expect(await status(old.key)).toBe(401)
    expect(await status(token)).toBe(200)

    const again = await consolePost(server.baseUrl, owner, "/admin/keys/roll", { csrf: owner.csrf, id: old.id, overlap: "1h" })
    expect(again.status).toBe(404)
    const other = await newKey("odd overlap")
    const odd = await consolePost(server.baseUrl, owner, "/admin/keys/roll", { csrf: owner.csrf, id: other.id, overlap: "3 weeks" })
    expect(odd.status).toBe(400)
    expect(await odd.text()).toContain("Unknown overlap")
    expect(await status(other.key)).toBe(200)
  })

  it("parley keys roll prints the new key once; the old one works for the overlap; the audit log names the CLI", async () => {
    const old = await newKey("rolled with the CLI")
    const result = await server.cli(["keys", "roll", "--org", demo.orgId, "--key", old.id, "--overlap", "24h"])
    expect(result.code, result.stderr).toBe(0)
    const token = /(parley_live_\w+)/.exec(result.stdout)?.[1] ?? ""
    expect(result.stdout).toContain("The old key works until")
    expect(await status(token)).toBe(200)
    expect(await status(old.key)).toBe(200)
    const now = await server.cliJson<{ key: string; replaces: string }>(["keys", "roll", "--org", demo.orgId, "--key", old.id, "--overlap", "now"])
    expect(now.replaces).toBe(old.id)
    expect(await status(old.key)).toBe(401)
    const wrong = await server.cli(["keys", "roll", "--org", demo.orgId, "--key", "key_nope", "--overlap", "1h"])
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toContain("--key")
    const entries = (await audit()).items.filter((e) => e.kind === "key.rolled" && e.subject === old.id)
    expect(entries.map((e) => e.actor)).toEqual(["cli", "cli"])
    expect(JSON.stringify(entries)).not.toMatch(/parley_(live|test)_/)
  })

  it("renames a key; a name over 100 characters is refused beside the field; the audit log has the change", async () => {
    const key = await newKey("to be renamed")
    const renamed = await consolePost(server.baseUrl, owner, "/admin/keys/edit", { csrf: owner.csrf, id: key.id, name: "  billing sync  " })
    expect(renamed.status).toBe(303)
    expect(renamed.headers.get("location")).toBe(`/admin/keys/key?id=${key.id}&done=renamed`)
    const page = await (await consoleGet(server.baseUrl, owner, `/admin/keys/key?id=${key.id}&done=renamed`)).text()
    expect(page).toContain("The key was renamed.")
    expect(page).toContain("Key billing sync")
    const long = await consolePost(server.baseUrl, owner, "/admin/keys/edit", { csrf: owner.csrf, id: key.id, name: "n".repeat(101) })
    expect(long.status).toBe(400)
    expect(await long.text()).toContain("at most 100 characters")
    const tooLongCreate = await consolePost(server.baseUrl, owner, "/admin/keys/new", {
      csrf: owner.csrf, name: "x".repeat(101), scopes: "messages:read", mode: "live"
    })
    expect(tooLongCreate.status).toBe(400)
    const cli = await server.cli(["keys", "rename", "--org", demo.orgId, "--key", key.id, "--name", "billing sync v2"])
    expect(cli.code, cli.stderr).toBe(0)
    const names = (await server.adminJson<{ items: ReadonlyArray<{ id: string; name: string }> }>(["keys", "list", "--org", demo.orgId]))
      .items.filter((k) => k.id === key.id).map((k) => k.name)
    expect(names).toEqual(["billing sync v2"])
    const entries = (await audit()).items.filter((e) => e.kind === "key.changed" && e.subject === key.id)
    expect(entries.map((e) => [e.actor, e.detail])).toEqual([
      ["cli", "name=billing sync v2; was=billing sync"],
      ["kim@keys.example", "name=  billing sync  "]
    ])
    // A key of another organisation is as missing as one that does not exist.
    const other = await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Other keys org"])
    const connected = await server.admin(["crm", "connect", other.id, "--account", "Theirs"])
    expect(connected.code, connected.stderr).toBe(0)
    const foreign = await server.adminJson<CreatedKey>(["keys", "create", "--org", other.id, "--name", "theirs", "--scopes", "all", "--mode", "live"])
    expect((await consolePost(server.baseUrl, owner, "/admin/keys/edit", { csrf: owner.csrf, id: foreign.id, name: "mine" })).status).toBe(404)
    expect((await consolePost(server.baseUrl, owner, "/admin/keys/roll", { csrf: owner.csrf, id: foreign.id, overlap: "now" })).status).toBe(404)
    expect((await consoleGet(server.baseUrl, owner, `/admin/keys/key?id=${foreign.id}`)).status).toBe(404)
    expect(await status(foreign.key)).toBe(200)
  })

  it("Create key answers with a redirect: the secret is shown once, and reloading makes no second key", async () => {
    const before = await activeKeys()
    const created = await consolePost(server.baseUrl, owner, "/admin/keys/new", {
      csrf: owner.csrf, name: "made once", scopes: "messages:read", mode: "test"
    })
    expect(created.status).toBe(303)
    const location = created.headers.get("location") ?? ""
    const first = await (await consoleGet(server.baseUrl, owner, location)).text()
    expect(first).toContain("Key created")
    expect(first).toMatch(/parley_test_\w+/)
    for (let i = 0; i < 3; i++) {
      const reload = await (await consoleGet(server.baseUrl, owner, location)).text()
      expect(reload).toContain("Key already shown")
      expect(reload).not.toMatch(/parley_test_\w+/)
    }
    expect(await activeKeys()).toBe(before + 1)
  })
})

describe("pnpm start (serve --demo) twice on the same data", () => {
  it("leaves two active demo keys, revokes the first start's and says so", { timeout: 120_000 }, async () => {
    const db = await createTestDatabase()
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    const start = async () => {
      const child = spawn(process.execPath, [BIN, "serve", "--demo"], {
        env: { ...inherited, LOG_LEVEL: "warn", ...db.env, PORT: String(await freePort()), PARLEY_DATA_DIR: db.dataDir },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
      const deadline = Date.now() + 60_000
      while (!output.includes("Docs:")) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`serve --demo did not print its keys: ${output}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
      return output
    }
    const active = async () =>
      (await db.query<{ n: number | string }>("SELECT COUNT(*) AS n FROM api_keys WHERE org_id = ? AND revoked_at IS NULL", ["org_demo"]))
        .map((r) => Number(r.n))[0]
    try {
      const first = await start()
      expect(first).not.toContain("were revoked")
      expect(await active()).toBe(2)
      const firstLive = /parley_live_\w+/.exec(first)?.[0] ?? ""
      const second = await start()
      expect(second).toContain("The previous demo keys (2) were revoked")
      expect(await active()).toBe(2)
      const secondLive = /parley_live_\w+/.exec(second)?.[0] ?? ""
      expect(secondLive).not.toBe(firstLive)
      const stored = await db.query<{ revoked_at: string | null; hash: string }>(
        "SELECT revoked_at, hash FROM api_keys WHERE org_id = ? ORDER BY created_at",
        ["org_demo"]
      )
      expect(stored.map((k) => k.revoked_at === null)).toEqual([false, false, true, true])
    } finally {
      await db.drop()
    }
  })
})
