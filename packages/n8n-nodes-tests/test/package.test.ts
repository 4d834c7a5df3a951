/** The built package, loaded by n8n-core's PackageDirectoryLoader exactly as n8n loads a community package. */
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join, relative } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { INode } from "n8n-workflow"
import { loadPackage, N8nHarness, PACKAGE_DIR, PARLEY_TRIGGER, parleyNode } from "./support/n8n.js"

const packageJson = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"))

describe("n8n-nodes-parley as n8n loads it", () => {
  it("declares what n8n's verification asks for", () => {
    expect(packageJson.name).toBe("n8n-nodes-parley")
    expect(packageJson.keywords).toContain("n8n-community-node-package")
    expect(packageJson.dependencies ?? {}).toEqual({})
    expect(packageJson.peerDependencies).toEqual({ "n8n-workflow": "*" })
    expect(packageJson.n8n).toMatchObject({ n8nNodesApiVersion: 1, strict: true })
    for (const path of [...packageJson.n8n.nodes, ...packageJson.n8n.credentials]) expect(path).toMatch(/^dist\//)
  })

  it("loads the three nodes and the credential with icons and codex", async () => {
    const loader = await loadPackage()
    expect(loader.packageName).toBe("n8n-nodes-parley")
    expect(Object.keys(loader.known.nodes).sort()).toEqual(["parley", "parleyEventsTrigger", "parleyTrigger"])
    expect(Object.keys(loader.known.credentials)).toEqual(["parleyApi"])

    const byName = Object.fromEntries(loader.types.nodes.map((node) => [node.name, node]))
    const parley = byName["parley"]!
    const trigger = byName["parleyTrigger"]!
    expect(parley.displayName).toBe("Parley")
    expect(parley.usableAsTool).toBe(true)
    // The two triggers' names say which polls and which is instant.
    expect(trigger.displayName).toBe("Parley Polling Trigger")
    expect(trigger.polling).toBe(true)
    expect(trigger.usableAsTool).toBeUndefined()
    // The instant trigger: a webhook node n8n registers on activation, named as n8n's lint wants triggers named.
    const events = byName["parleyEventsTrigger"]!
    expect(events.displayName).toBe("Parley Instant Trigger")
    expect(events.group).toEqual(["trigger"])
    expect(events.inputs).toEqual([])
    expect(events.polling).toBeUndefined()
    expect(events.usableAsTool).toBeUndefined()
    expect(events.webhooks).toEqual([{ name: "default", httpMethod: "POST", responseMode: "onReceived", path: "webhook" }])
    expect(events.codex?.alias).toEqual(expect.arrayContaining(["Webhook", "Inbound"]))

    for (const node of [parley, trigger, events]) {
      expect(node.codex?.categories).toEqual(["Communication"])
      expect(node.codex?.alias).toEqual(expect.arrayContaining(["SMS", "WhatsApp", "Call", "Voice"]))
      expect(node.iconUrl).toEqual({
        light: "icons/n8n-nodes-parley/dist/icons/parley.svg",
        dark: "icons/n8n-nodes-parley/dist/icons/parley.dark.svg"
      })
    }
    // Every icon n8n will serve exists in the built package.
    for (const path of Object.values(loader.types.nodes[0]!.iconUrl as Record<string, string>)) {
      const file = join(PACKAGE_DIR, path.replace("icons/n8n-nodes-parley/", ""))
      expect(readFileSync(file, "utf8")).toContain("<svg")
    }

    const credential = loader.types.credentials[0]!
    expect(credential.displayName).toBe("Parley API")
    const fields = credential.properties.filter((p) => p.type !== "notice")
    expect(fields.map((p) => p.name)).toEqual(["baseUrl", "apiKey"])
    expect(fields[1]!.typeOptions?.password).toBe(true)
    // Parley's own key prefixes and default port, not placeholders.
    expect(fields[1]!.description).toContain("parley_test_…")
    expect(fields[1]!.description).not.toContain("<service>")
    expect(fields[0]!.description).toContain("http://localhost:8787")
    expect(credential.test?.request).toMatchObject({ url: "/api/v1/numbers", method: "GET" })
    expect(loader.known.credentials.parleyApi!.supportedNodes).toEqual(
      ["parley", "parleyTrigger", "parleyEventsTrigger"]
    )
  })

  it("offers the issue's actions and searchable pickers", async () => {
    const loader = await loadPackage()
    const parley = loader.types.nodes.find((node) => node.name === "parley")!
    const actions = parley.properties
      .filter((p) => p.name === "operation")
      .flatMap((p) => (p.options ?? []).map((o) => ("action" in o ? o.action : undefined)))
    expect(actions).toEqual(
      expect.arrayContaining([
        "Send message",
        "Start AI call",
        "Cancel message",
        "Cancel AI call",
        "Get message",
        "Get AI call",
        "Get many messages",
        "Get many AI calls",
        "Get many conversations",
        "Get messages of a conversation",
        "Get many numbers",
        "Get many bots",
        "Get many templates",
        "Get opt-out",
        "Add opt-out",
        "Remove opt-out"
      ])
    )
    const searchMethods = parley.properties
      .flatMap((p) => p.modes ?? [])
      .map((mode) => mode.typeOptions?.searchListMethod)
      .filter((name) => name !== undefined)
    expect(new Set(searchMethods)).toEqual(new Set(["searchNumbers", "searchTemplates", "searchBots", "searchConversations"]))
  })

  it("field descriptions speak of the node's fields, not the API's", async () => {
    const loader = await loadPackage()
    const parley = loader.types.nodes.find((node) => node.name === "parley")!
    const descriptions = (properties: ReadonlyArray<unknown>): string[] =>
      properties.flatMap((property) => {
        if (typeof property !== "object" || property === null) return []
        const { description, options, values } = property as { description?: unknown; options?: unknown; values?: unknown }
        return [
          ...(typeof description === "string" ? [description] : []),
          ...(Array.isArray(options) ? descriptions(options) : []),
          ...(Array.isArray(values) ? descriptions(values) : [])
        ]
      })
    const all = descriptions(parley.properties)
    expect(all.length).toBeGreaterThan(20)
    for (const apiField of ["fromNumberSid", "templateUuid", "scheduledFor", "whatsAppContentSid", "botId", "purposeMessage"]) {
      expect(all.filter((description) => description.includes(apiField))).toEqual([])
    }
  })

  it("subtitles name the action, not raw values", async () => {
    const loader = await loadPackage()
    const harness = new N8nHarness(loader, { baseUrl: "http://127.0.0.1:9", apiKey: "unused" })
    const parley = loader.types.nodes.find((node) => node.name === "parley")!
    const pairs = parley.properties
      .filter((p) => p.name === "operation")
      .flatMap((p) =>
        (p.displayOptions!.show!.resource as string[]).flatMap((resource) =>
          (p.options ?? []).map((o) => ({ resource, operation: String("value" in o ? o.value : ""), action: "action" in o ? o.action : "" }))
        )
      )
    expect(pairs.length).toBeGreaterThan(10)
    for (const { resource, operation, action } of pairs) {
      expect(harness.subtitle(parleyNode("Parley", { resource, operation }))).toBe(action)
    }
    const trigger = (watch: string): INode => ({
      id: "t", name: "Parley Trigger", type: PARLEY_TRIGGER, typeVersion: 1, position: [0, 0], parameters: { watch }
    })
    expect(harness.subtitle(trigger("ids"))).toBe("Status changes of watched IDs")
    expect(harness.subtitle(trigger("all"))).toBe("Status changes of all messages and AI calls")
    const events = (chosen: string[]): INode => ({
      id: "e", name: "Parley Events Trigger", type: "n8n-nodes-parley.parleyEventsTrigger", typeVersion: 1, position: [0, 0],
      parameters: { events: chosen }
    })
    expect(harness.subtitle(events(["*"]))).toBe("All events")
    expect(harness.subtitle(events(["message.delivered", "message.failed"]))).toBe("2 events")
    expect(harness.subtitle(events(["message.received"]))).toBe("1 event")
  })

  it("ships nothing of Effect or @parley/core", () => {
    const built = readFileSync(join(PACKAGE_DIR, "dist/nodes/Parley/shared/api.js"), "utf8")
    expect(built).not.toMatch(/require\("(effect|@parley\/core)/)
  })
})

describe("n8n-nodes-parley as npm packs it", () => {
  // `n8n-node release` publishes with npm, which (unlike pnpm) rewrites nothing in package.json.
  let work: string
  let root: string
  let manifest: Record<string, unknown>
  const files: string[] = []

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "parley-n8n-pack-"))
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", work], {
        cwd: PACKAGE_DIR,
        // npm on the Node running the tests (the pinned one), whatever else PATH has.
        env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env["PATH"] ?? ""}` },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"]
      })
    ) as Array<{ filename: string }>
    execFileSync("tar", ["xzf", join(work, packed[0]!.filename), "-C", work])
    root = join(work, "package")
    manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (entry.isDirectory()) walk(path)
        else files.push(relative(root, path))
      }
    }
    walk(root)
  }, 120_000)

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true })
  })

  it("names no entry point that is not in the package", () => {
    const entries = [manifest.main, manifest.types, manifest.module].filter((entry) => entry !== undefined)
    for (const entry of entries) expect(existsSync(join(root, String(entry))), String(entry)).toBe(true)
    const n8n = manifest.n8n as { nodes: string[]; credentials: string[] }
    for (const path of [...n8n.nodes, ...n8n.credentials]) expect(files).toContain(path)
  })

  it("keeps no workspace: or link: versions that only resolve inside this repository", () => {
    for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      for (const [name, version] of Object.entries((manifest[field] ?? {}) as Record<string, string>)) {
        expect(version, `${field}.${name}`).not.toMatch(/^(workspace|link|file):/)
      }
    }
  })

  it("ships a source map only with the sources it points to", () => {
    for (const file of files.filter((path) => path.endsWith(".js"))) {
      const reference = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(root, file), "utf8"))
      if (reference === null) continue
      expect(files, `${file} points to its map`).toContain(join(dirname(file), reference[1]!))
    }
    for (const map of files.filter((path) => path.endsWith(".map"))) {
      const { sources } = JSON.parse(readFileSync(join(root, map), "utf8")) as { sources: string[] }
      for (const source of sources) expect(files, `${map} → ${source}`).toContain(join(dirname(map), source))
    }
  })
})
