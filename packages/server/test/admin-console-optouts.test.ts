/**
 * The console's Opt-outs page and the keyword settings of its Sending rules page, over plain HTTP on both
 * stores: an administrator's opt-out (source `console`, their email as the cause) refuses the next text, a
 * removal (after its confirmation page) lets it through, a carrier's opt-out is liftable here, the list pages
 * newest first, the number's history is shown, another organisation's administrator gets 404 and sees
 * nothing, forms without the CSRF token change nothing, and the keyword settings are validated as the CLI's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleGet, consolePost, type ConsoleSession, setPasswordFromLink, signIn } from "./support/console.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { expectError } from "./support/wire.js"

const PASSWORD = "a long passphrase for the console"

interface Listed {
  readonly items: ReadonlyArray<{ phone: string; channels: ReadonlyArray<string>; source: string; reason: string | null; cause: string | null }>
  readonly history?: ReadonlyArray<{ change: string; source: string; cause: string | null }>
}

describe("console: opt-outs and keyword settings", () => {
  let server: TestServer
  let demo: DemoSummary
  let orgB: string
  let a: ConsoleSession
  let b: ConsoleSession
  let n = 0

  const administrator = async (org: string, email: string) => {
    const invited = await server.adminJson<{ link: string }>(["admins", "create", org, "--email", email])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
    return signIn(server.baseUrl, email, PASSWORD)
  }

  beforeAll(async () => {
    // The paging test makes 51 opt-outs through the API; the per-key limit is not under test here.
    server = await TestServer.start({ env: { PARLEY_RATE_LIMIT_PER_MINUTE: "100000" } })
    demo = await server.demo()
    orgB = (await server.adminJson<{ id: string }>(["orgs", "create", "--name", "Other org"])).id
    a = await administrator(demo.orgId, "ada@a.example")
    b = await administrator(orgB, "bob@b.example")
  }, 180_000)

  afterAll(async () => {
    await server?.dispose()
  })

  const text = (to: string) =>
    server.fetch("/api/v1/messages", {
      method: "POST",
      key: demo.keys.live,
      headers: { "idempotency-key": `console-optouts-${++n}` },
      body: JSON.stringify({ to, fromNumberSid: demo.numbers[0]?.sid, body: "Hello" })
    })
  const listed = (phone: string) => server.adminJson<Listed>(["optouts", "list", "--org", demo.orgId, "--phone", phone])
  const add = (session: ConsoleSession, fields: Record<string, string>, channels: ReadonlyArray<string>) => {
    const form = new URLSearchParams({ csrf: session.csrf, ...fields })
    for (const channel of channels) form.append("channels", channel)
    return fetch(`${server.baseUrl}/admin/opt-outs/add`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: session.cookie },
      body: form.toString(),
      redirect: "manual"
    })
  }

  it("an administrator's opt-out refuses the next text; the page shows it and its history; removal after confirmation lets texts through", async () => {
    const phone = "+14155550161"
    const added = await add(a, { phone, reason: "Asked on the phone <b>" }, ["SMS", "Call"])
    expect(added.status).toBe(303)
    expect(added.headers.get("location")).toBe(`/admin/opt-outs?search=%2B14155550161&done=added`)
    expect((await listed(phone)).items).toEqual([
      expect.objectContaining({ phone, channels: ["SMS", "Call"], source: "console", reason: "Asked on the phone <b>", cause: "ada@a.example" })
    ])
    await expectError(await text(phone), 403, "RECIPIENT_OPTED_OUT")
    // The same again changes nothing.
    expect((await add(a, { phone, reason: "Asked on the phone <b>" }, ["SMS", "Call"])).headers.get("location")).toContain("done=unchanged")

    // Without the column names the cells carry for narrow screens (ResponsiveTables).
    const shown = (await (await consoleGet(server.baseUrl, a, "/admin/opt-outs?search=%2B14155550161&done=added")).text()).replace(/ data-label="[^"]*"/g, "")
    expect(shown).toContain("The number was opted out")
    expect(shown).toContain("<td>SMS, Call</td><td>console</td>")
    expect(shown).toContain("Asked on the phone &lt;b&gt;")
    expect(shown).toMatch(/History of \+14155550161, newest first<\/caption>[\s\S]*<td>added<\/td><td>SMS, Call<\/td><td>console<\/td>/)
    expect(shown).toContain(`href="/admin/opt-outs/remove?phone=%2B14155550161" aria-label="Remove the opt-out of +14155550161"`)

    const confirm = await consoleGet(server.baseUrl, a, "/admin/opt-outs/remove?phone=%2B14155550161")
    expect(confirm.status).toBe(200)
    expect(await confirm.text()).toContain("Let +14155550161 be texted and called again?")
    // Nothing changes until the confirmation is posted.
    await expectError(await text(phone), 403, "RECIPIENT_OPTED_OUT")
    const removed = await consolePost(server.baseUrl, a, "/admin/opt-outs/remove", { csrf: a.csrf, phone })
    expect(removed.status).toBe(303)
    expect((await text(phone)).status).toBe(202)
    const after = await listed(phone)
    expect(after.items).toEqual([])
    expect(after.history?.[0]).toMatchObject({ change: "removed", source: "console", cause: "ada@a.example" })
    // Removing what is not there is 404.
    expect((await consolePost(server.baseUrl, a, "/admin/opt-outs/remove", { csrf: a.csrf, phone })).status).toBe(404)
  })

  it("an administrator may lift a carrier's opt-out, which a key may not", async () => {
    const phone = "+14155550162"
    await server.db.query(
      "INSERT INTO opt_outs (org_id, phone, channels, source, reason, cause, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      [demo.orgId, phone, "SMS", "carrier", null, "action msg_x", new Date().toISOString()]
    )
    await expectError(await server.fetch(`/api/v1/opt-outs/${phone}`, { method: "DELETE", key: demo.keys.live }), 409, "OPT_OUT_NOT_REMOVABLE")
    expect(await (await consoleGet(server.baseUrl, a, `/admin/opt-outs/remove?phone=${encodeURIComponent(phone)}`)).text())
      .toContain("The recipient asked for this themselves")
    expect((await consolePost(server.baseUrl, a, "/admin/opt-outs/remove", { csrf: a.csrf, phone })).status).toBe(303)
    expect((await listed(phone)).items).toEqual([])
  })

  it("a wrong number, no channel or a long reason is refused in the page (400), and nothing is recorded", async () => {
    const response = await add(a, { phone: "4155550163", reason: "x".repeat(501) }, [])
    expect(response.status).toBe(400)
    const page = await response.text()
    expect(page).toContain(`id="field-phone-error"`)
    expect(page).toContain(`id="field-channels-error"`)
    expect(page).toContain(`id="field-reason-error"`)
    expect(page).toContain(`value="4155550163"`)
    expect((await add(a, { phone: "+14155550163" }, ["Fax"])).status).toBe(400)
    expect((await listed("+14155550163")).items).toEqual([])
    expect((await consoleGet(server.baseUrl, a, "/admin/opt-outs?search=nonsense%21")).status).toBe(400)
  })

  it("the list is newest first, 50 a page, with a link to the older ones", async () => {
    const phones = Array.from({ length: 51 }, (_, i) => `+1415555${String(2000 + i)}`)
    for (const phone of phones) {
      const put = await server.fetch(`/api/v1/opt-outs/${encodeURIComponent(phone)}`, { method: "PUT", key: demo.keys.live, body: "{}" })
      expect(put.status).toBe(200)
    }
    const first = await (await consoleGet(server.baseUrl, a, "/admin/opt-outs")).text()
    const rows = (html: string) => [...html.replace(/ data-label="[^"]*"/g, "").matchAll(/<tr><td><a href="[^"]+">(\+\d+)<\/a><\/td>/g)].map((m) => m[1])
    const firstRows = rows(first)
    expect(firstRows).toHaveLength(50)
    expect(firstRows[0]).toBe(phones[50])
    const older = /<a href="([^"]+)">Older opt-outs<\/a>/.exec(first)?.[1]?.replaceAll("&amp;", "&")
    expect(older).toBeDefined()
    const second = rows(await (await consoleGet(server.baseUrl, a, older ?? "")).text())
    // The 51 made here, and nothing from the first page twice.
    expect(new Set([...firstRows, ...second]).size).toBe(firstRows.length + second.length)
    expect([...firstRows, ...second]).toEqual(expect.arrayContaining(phones))
  }, 120_000)

  it("another organisation's administrator gets 404 for A's opt-outs and does not see them; forms without the CSRF token change nothing", async () => {
    const phone = "+14155550164"
    expect((await add(a, { phone }, ["SMS"])).status).toBe(303)
    const forged = await Promise.all([
      consoleGet(server.baseUrl, b, `/admin/opt-outs/remove?phone=${encodeURIComponent(phone)}`),
      consolePost(server.baseUrl, b, "/admin/opt-outs/remove", { csrf: b.csrf, phone })
    ])
    expect(forged.map((r) => r.status)).toEqual([404, 404])
    const bList = await (await consoleGet(server.baseUrl, b, `/admin/opt-outs?search=${encodeURIComponent(phone)}`)).text()
    expect(bList).toContain(`${phone} has not opted out`)
    expect(bList).not.toContain("ada@a.example")
    // B's own opt-out of the same number is B's alone.
    expect((await add(b, { phone: "+14155550165" }, ["SMS"])).status).toBe(303)
    expect((await listed("+14155550165")).items).toEqual([])

    const noToken = await consolePost(server.baseUrl, a, "/admin/opt-outs/remove", { phone })
    const crossSite = await fetch(`${server.baseUrl}/admin/opt-outs/add`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: a.cookie, origin: "https://evil.example" },
      body: new URLSearchParams({ csrf: a.csrf, phone: "+14155550166", channels: "SMS" }).toString(),
      redirect: "manual"
    })
    expect([noToken.status, crossSite.status]).toEqual([403, 403])
    expect((await listed(phone)).items).toHaveLength(1)
    expect((await listed("+14155550166")).items).toEqual([])
  })

  it("Sending rules: STOP also stops AI calls and own opt-out words, validated as the CLI does (each ≤ 40 characters)", async () => {
    const page = await (await consoleGet(server.baseUrl, a, "/admin/rules")).text()
    expect(page).toMatch(/name="callsFollowOptOuts" value="on" checked>STOP also stops AI calls/)
    const field = (html: string, name: string) => new RegExp(`name="${name}" type="text" value="([^"]*)"`).exec(html)?.[1] ?? ""
    const form = {
      csrf: a.csrf,
      sendingHours: field(page, "sendingHours"),
      timezone: field(page, "timezone"),
      smsAllowance: field(page, "smsAllowance"),
      callAllowance: field(page, "callAllowance")
    }
    const tooLong = await consolePost(server.baseUrl, a, "/admin/rules", { ...form, optOutWords: `ARRET, ${"x".repeat(41)}` })
    expect(tooLong.status).toBe(400)
    const refused = await tooLong.text()
    expect(refused).toContain(`<p class="error" id="field-optOutWords-error">&quot;${"x".repeat(41)}&quot; is longer than 40 characters.</p>`)
    expect(refused).toContain(`aria-invalid="true"`)
    const unchanged = await server.adminJson<{ optOutWords?: ReadonlyArray<string>; callsFollowOptOuts?: boolean }>(["orgs", "show", demo.orgId])
    expect(unchanged.optOutWords ?? []).toEqual([])

    const saved = await consolePost(server.baseUrl, a, "/admin/rules", { ...form, optOutWords: " ARRET, baja ,ARRET," })
    expect(saved.status).toBe(303)
    const org = await server.adminJson<{ optOutWords?: ReadonlyArray<string>; callsFollowOptOuts?: boolean }>(["orgs", "show", demo.orgId])
    expect(org).toMatchObject({ optOutWords: ["ARRET", "baja"], callsFollowOptOuts: false })
    const reread = await (await consoleGet(server.baseUrl, a, "/admin/rules")).text()
    expect(reread).toContain(`name="optOutWords" type="text" value="ARRET, baja"`)
    expect(reread).toMatch(/name="callsFollowOptOuts" value="on">STOP also stops AI calls/)

    // The word now opts a sender out, of texts only (STOP does not stop calls any more).
    const sender = "+14155550167"
    expect((await server.admin(["inbound", "--org", demo.orgId, "--from", sender, "--to", demo.numbers[0]?.phoneNumber ?? "", "--body", "Baja."])).code).toBe(0)
    expect((await listed(sender)).items).toEqual([expect.objectContaining({ channels: ["SMS", "WhatsApp"], source: "keyword" })])
  })

  it("Sending rules: who answers keywords and Parley's texts, validated as the CLI does (each ≤ 306 characters)", async () => {
    const page = await (await consoleGet(server.baseUrl, a, "/admin/rules")).text()
    expect(page).toMatch(/name="keywordReplies" value="provider" checked>The provider answers/)
    const organisation = await server.adminJson<{ name: string }>(["orgs", "show", demo.orgId])
    expect(page).toContain(`Empty for the default: &quot;${organisation.name}: You will receive no more messages. Reply START to opt back in.&quot;`)
    const field = (html: string, name: string) => new RegExp(`name="${name}" type="text" value="([^"]*)"`).exec(html)?.[1] ?? ""
    const form = {
      csrf: a.csrf,
      sendingHours: field(page, "sendingHours"),
      timezone: field(page, "timezone"),
      smsAllowance: field(page, "smsAllowance"),
      callAllowance: field(page, "callAllowance"),
      optOutWords: field(page, "optOutWords"),
      callsFollowOptOuts: "on"
    }
    const tooLong = await consolePost(server.baseUrl, a, "/admin/rules", { ...form, keywordReplies: "parley", stopText: "x".repeat(307) })
    expect(tooLong.status).toBe(400)
    expect(await tooLong.text()).toContain(`<p class="error" id="field-stopText-error">At most 306 characters (this one has 307).</p>`)
    const unknownMode = await consolePost(server.baseUrl, a, "/admin/rules", { ...form, keywordReplies: "carrier" })
    expect(unknownMode.status).toBe(400)
    expect((await server.adminJson<{ keywordReplies?: string }>(["orgs", "show", demo.orgId])).keywordReplies).toBe("provider")

    const saved = await consolePost(server.baseUrl, a, "/admin/rules", {
      ...form,
      keywordReplies: "parley",
      stopText: " Acme: no more texts from us. ",
      startText: "",
      helpText: ""
    })
    expect(saved.status).toBe(303)
    const org = await server.adminJson<{ keywordReplies?: string; keywordTexts?: unknown }>(["orgs", "show", demo.orgId])
    expect(org).toMatchObject({ keywordReplies: "parley", keywordTexts: { stop: "Acme: no more texts from us.", start: null, help: null } })
    const reread = await (await consoleGet(server.baseUrl, a, "/admin/rules")).text()
    expect(reread).toMatch(/name="keywordReplies" value="parley" checked>Parley answers/)
    expect(reread).toContain(`name="stopText" type="text" value="Acme: no more texts from us."`)

    // A STOP is now answered by Parley, with that text, queued with the inbound message.
    const sender = "+14155550168"
    expect((await server.admin(["inbound", "--org", demo.orgId, "--from", sender, "--to", demo.numbers[0]?.phoneNumber ?? "", "--body", "STOP"])).code).toBe(0)
    const answers = await server.db.query<{ body: string }>(
      "SELECT body FROM actions WHERE org_id = ? AND counterpart = ? AND direction = 'Outbound'",
      [demo.orgId, sender]
    )
    expect(answers).toEqual([{ body: "Acme: no more texts from us." }])
    await server.adminJson(["orgs", "update", demo.orgId, "--keyword-replies", "provider"])
  })
})
