/**
 * The provider seam (issue 24), on both stores: a provider's name appears in the server's sources only
 * in its folder, the registry and the migrations; the console's Providers page is derived from the
 * registered providers' settings (Retell's form among them) and, like `parley providers set`, replaces
 * the provider of the same kind, saying so; and an AI call whose hand-over to Vapi may have reached Vapi
 * is never placed again through Retell once the organisation switched: it fails, saying why.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BUILT_IN, CRM_NAMES } from "../src/crm/Registry.js"
import { PROVIDER_NAMES } from "../src/providers/Registry.js"
import { consoleGet, consolePost, setPasswordFromLink, signIn } from "./support/console.js"
import { RetellFake } from "./support/fakes/RetellFake.js"
import { VapiFake } from "./support/fakes/VapiFake.js"
import { type DemoSummary, TestServer } from "./support/server.js"
import { readUntil } from "./support/wire.js"
import { PN1 } from "./support/demo.js"

const HEAVY = 180_000
const LINE = "+14155550100"
const VAPI_PHONE = "3f1c9a2e-5b7d-4e61-9c3a-0d2b8e7f6a51"
const ASSISTANT = "a1b2c3d4-0000-4000-8000-00000000a551"
const AGENT = "agent_0123456789abcdef01234567"
const PASSWORD = "a long passphrase for the seam"
const FINAL = new Set(["Completed", "No Answer", "Busy", "Failed"])

const SRC = fileURLToPath(new URL("../src", import.meta.url))
/** A provider's own values that name another provider: Vapi's endedReason for a call its carrier ended. */
const PROVIDER_DATA = ["call.in-progress.twilio-completed-call"]

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : entry.name.endsWith(".ts") ? [path] : []
  })

describe("one seam: where a provider's name may appear", () => {
  it("outside providers/<name>/, only the registry and the migrations name a provider", () => {
    // Migrations keep the names they were written with; everything else asks the registry.
    const allowed = (file: string, name: string) =>
      file.startsWith(`providers${sep}${name}${sep}`) ||
      file === `providers${sep}Registry.ts` ||
      file === `store${sep}migrations.ts`
    const offenders = sources(SRC).flatMap((path) => {
      const file = relative(SRC, path)
      const text = PROVIDER_DATA.reduce((left, value) => left.split(value).join(""), readFileSync(path, "utf8"))
      return PROVIDER_NAMES.filter((name) => !allowed(file, name) && new RegExp(`\\b${name}\\b`, "i").test(text))
        .map((name) => `${file}: ${name}`)
    })
    expect(PROVIDER_NAMES).toEqual(["twilio", "vapi", "retell"])
    expect(offenders).toEqual([])
  })
})

/** The name in any case, alone or starting an identifier (`zoho`, `Zoho's`, `zohoOrg`, `ZohoConnect`), not inside a word. */
const namePattern = (name: string) =>
  new RegExp(`(?<![A-Za-z])${[...name].map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`).join("")}(?![a-z])`)

/**
 * The CRM seam (issue 34): a CRM's name appears in the server's sources only in its folder (`crm/<name>/`; the
 * built-in CRM's, `built-in`, in `crm/builtin/`), the registry and the migrations (which keep the table names
 * they were written with) — comments included: the console, the CLI, the callback route, configuration,
 * sealing and metrics all ask the registry. Nothing else imports from a CRM's folder either.
 */
const folderOf = (name: string) => name.replace(/[^A-Za-z0-9]/g, "")
/** A CRM's own words that contain another CRM's name: Zoho's profile with every permission is its "built-in" one. */
const CRM_DATA = ["Zoho's built-in profile"]
const crmOffenders = (files: ReadonlyArray<{ readonly file: string; readonly text: string }>, names: ReadonlyArray<string>) =>
  files.flatMap(({ file, text }) => {
    const own = CRM_DATA.reduce((left, value) => left.split(value).join(""), text)
    return names.filter((name) =>
      !(file.startsWith(`crm${sep}${folderOf(name)}${sep}`) ||
        file === `crm${sep}Registry.ts` ||
        file === `store${sep}migrations.ts` ||
        new RegExp(`^store\\${sep}[A-Za-z0-9]+Migration\\.ts$`).test(file)) &&
      (namePattern(name).test(own) || own.includes(`/${folderOf(name)}/`))
    ).map((name) => `${file}: ${name}`)
  })

describe("one seam: where a CRM's name may appear", () => {
  const files = sources(SRC).map((path) => ({ file: relative(SRC, path), text: readFileSync(path, "utf8") }))
  const names = [BUILT_IN.name, ...CRM_NAMES]

  it("outside crm/<name>/, only the registry and the migrations name a CRM, the built-in one included", () => {
    expect(CRM_NAMES).toContain("zoho")
    expect(BUILT_IN.name).toBe("built-in")
    // The built-in CRM is a folder of its own, as the others are.
    expect(sources(join(SRC, "crm", folderOf(BUILT_IN.name))).length).toBeGreaterThan(0)
    expect(sources(join(SRC, "store")).map((path) => relative(SRC, path))).not.toContain(`store${sep}SqlCrm.ts`)
    expect(crmOffenders(files, names)).toEqual([])
  })

  it("the check finds a CRM named anywhere else, in code or in a comment", () => {
    // The rule itself, on the real sources with one line added where a CRM's name must not be.
    const planted = files.map((f) =>
      f.file === `admin${sep}pages${sep}CrmPage.ts` ? { ...f, text: `${f.text}\n// as Zoho does\n` } : f
    )
    expect(crmOffenders(planted, names)).toEqual([`admin${sep}pages${sep}CrmPage.ts: zoho`])
    const inCode = files.map((f) =>
      f.file === `cli${sep}commands${sep}crm.ts` ? { ...f, text: f.text.replace("CRM_NAMES", "[\"zoho\"]") } : f
    )
    expect(crmOffenders(inCode, names)).toEqual([`cli${sep}commands${sep}crm.ts: zoho`])
    const imported = files.map((f) =>
      f.file === `AppLayer.ts` ? { ...f, text: `${f.text}\nconst layer = ZohoCrmLayer\n` } : f
    )
    expect(crmOffenders(imported, names)).toEqual([`AppLayer.ts: zoho`])
    // The built-in CRM's name, and an import from its folder, are found as the others' are.
    const builtInNamed = files.map((f) =>
      f.file === `admin${sep}CrmConnection.ts` ? { ...f, text: f.text.replace("BUILT_IN.name", "\"built-in\"") } : f
    )
    expect(crmOffenders(builtInNamed, names)).toEqual([`admin${sep}CrmConnection.ts: built-in`])
    const builtInImported = files.map((f) =>
      f.file === `store${sep}SqlApiKeyStore.ts`
        ? { ...f, text: `import { make } from "../crm/builtin/BuiltInCrm.js"\n${f.text}` }
        : f
    )
    expect(crmOffenders(builtInImported, names)).toEqual([`store${sep}SqlApiKeyStore.ts: built-in`])
  })
})

/** Source without its comments: documentation may cite a provider's behaviour, code may not depend on one. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

describe("one seam: the core's provider port", () => {
  const CORE = fileURLToPath(new URL("../../core/src", import.meta.url))

  it("the core names no provider: statuses, tables and clients live in the providers' folders", () => {
    const offenders = sources(CORE).flatMap((path) =>
      PROVIDER_NAMES.filter((name) => new RegExp(`\\b${name}\\b`, "i").test(code(readFileSync(path, "utf8"))))
        .map((name) => `${relative(CORE, path)}: ${name}`)
    )
    expect(offenders).toEqual([])
  })

  it("the dispatcher meets the simulator only through the Providers port, as one provider among the others", () => {
    const dispatch = sources(join(SRC, "dispatch"))
    expect(dispatch.length).toBeGreaterThan(3)
    const offenders = dispatch.flatMap((path) => {
      const imports = readFileSync(path, "utf8").split("\n").filter((line) => /^import\b/.test(line))
      return imports
        .filter((line) => /Simulat(ion|or|ed)|SqlSimulatorMemory|providers\/(?!Registry)/.test(line))
        .map((line) => `${relative(SRC, path)}: ${line}`)
    })
    expect(offenders).toEqual([])
  })
})

describe("providers, one per kind", () => {
  let server: TestServer
  let demo: DemoSummary
  let vapi: VapiFake
  let retell: RetellFake
  let counter = 0

  const useVapi = () =>
    server.adminOk([
      "providers", "set", "--org", demo.orgId, "--kind", "vapi", "--api-key", vapi.apiKey,
      "--webhook-secret", "vapi-secret-for-the-seam", "--api-base", vapi.url
    ])
  const useRetell = () =>
    server.adminOk(["providers", "set", "--org", demo.orgId, "--kind", "retell", "--api-key", retell.apiKey, "--api-base", retell.url])
  const accountKinds = async () =>
    (await server.db.query<{ kind: string }>("SELECT kind FROM provider_accounts WHERE org_id = ? ORDER BY kind", [
      demo.orgId
    ])).map((r) => r.kind)

  beforeAll(async () => {
    vapi = await VapiFake.start({ stepMs: 30 })
    retell = await RetellFake.start({ stepMs: 30, agents: [AGENT], numbers: [{ number: LINE }] })
    server = await TestServer.start({
      env: { PARLEY_SIM_STEP_MS: "50", PARLEY_RATE_LIMIT_PER_MINUTE: "100000", PARLEY_PROVIDER_RECHECK_MS: "2000" }
    })
    demo = await server.demo()
    await server.adminOk([
      "numbers", "add", "--org", demo.orgId, "--sid", PN1, "--phone", LINE, "--name", "Sales line",
      "--voice-bot", "bot_sales", "--provider-id", VAPI_PHONE
    ])
    // The same bot id serves both providers here: the agent and the assistant are the provider's business.
    await server.adminOk(["bots", "add", "--org", demo.orgId, "--id", "bot_sales", "--name", "Sales qualifier", "--provider-id", ASSISTANT])
    const invited = await server.adminJson<{ link: string }>(["admins", "create", demo.orgId, "--email", "seam@a.example"])
    await setPasswordFromLink(server.baseUrl, invited.link, PASSWORD)
  }, HEAVY)
  afterAll(async () => {
    await server?.dispose()
    await vapi?.stop()
    await retell?.stop()
  })

  it("the console's Providers page offers Retell's form, refuses it without a key, and replaces Vapi with it, saying so", async () => {
    await useVapi()
    const session = await signIn(server.baseUrl, "seam@a.example", PASSWORD)
    const page = await (await consoleGet(server.baseUrl, session, "/admin/providers")).text()
    expect(page).toContain("Set Retell (AI calls)")
    expect(page).toContain(`name="retellApiBase"`)
    // Fields two forms share are told apart (ids are unique on the page).
    expect(page).toContain(`name="retellApiKey"`)
    expect(page).toContain(`name="vapiApiKey"`)
    const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((m) => m[1])
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([])
    expect(page).toContain("Saving replaces Vapi for AI calls.")

    const refused = await consolePost(server.baseUrl, session, "/admin/providers/set", {
      csrf: session.csrf,
      kind: "retell",
      retellApiKey: "",
      // The console takes only the provider's own hosts as a base (a local fake's is the operator's setting).
      retellApiBase: "https://api.retellai.com"
    })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain("Is required for Retell.")
    expect(await accountKinds()).toEqual(["vapi"])

    const saved = await consolePost(server.baseUrl, session, "/admin/providers/set", {
      csrf: session.csrf,
      kind: "retell",
      retellApiKey: retell.apiKey,
      retellApiBase: "https://api.retellai.com"
    })
    expect(saved.status).toBe(303)
    const location = saved.headers.get("location") ?? ""
    expect(location).toBe("/admin/providers?done=retell&replaced=vapi")
    const after = await (await consoleGet(server.baseUrl, session, location)).text()
    expect(after).toContain("Retell is set: the organisation&#39;s AI calls go through it. It replaces Vapi")
    expect(after).not.toContain(retell.apiKey)
    expect(await accountKinds()).toEqual(["retell"])
    const shown = await server.adminJson<{ aiCalls: string; setup: ReadonlyArray<string> }>([
      "providers", "show", "--org", demo.orgId
    ])
    expect(shown.aiCalls).toBe("retell")
    expect(shown.setup.join("\n")).toContain(`/providers/retell/events?org=${demo.orgId}`)
  }, HEAVY)

  it("a call whose hand-over to Vapi may have reached Vapi is not placed through Retell after the switch: it fails, saying so", async () => {
    await useVapi()
    const to = "+14155550371"
    // Vapi makes the call but the answer is lost, and its server messages are refused: Parley cannot know.
    vapi.dropNextAfterAccept()
    vapi.tweakNextCallbacks({ signature: "none" })
    const response = await server.fetch("/api/v1/ai-calls", {
      key: demo.keys.live,
      method: "POST",
      headers: { "idempotency-key": `seam-${Date.now()}-${++counter}` },
      body: JSON.stringify({ to, fromNumberSid: PN1, botId: "bot_sales", mode: "follow_script" })
    })
    expect(response.status).toBe(202)
    const { id } = (await response.json()) as { id: string }
    await readUntil(async () => vapi.calls.filter((c) => c.customer.number === to).length, (n) => n === 1)
    await useRetell()
    const record = await readUntil(
      () =>
        server.fetch(`/api/v1/ai-calls/${id}`, { key: demo.keys.live }).then((r) =>
          r.json() as Promise<{ status?: string | null; errorMessage?: string | null }>
        ),
      (r) => FINAL.has(r.status ?? ""),
      60_000
    )
    expect(record.status).toBe("Failed")
    expect(record.errorMessage).toContain("replaced Vapi with Retell")
    expect(retell.calls.filter((c) => c.resource.to_number === to)).toHaveLength(0)
    expect(vapi.calls.filter((c) => c.customer.number === to)).toHaveLength(1)
  }, HEAVY)
})
