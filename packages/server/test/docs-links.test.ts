/**
 * The README and the docs/ pages hold together: every relative link between them names a file that
 * exists and, when it has one, a heading of that file; the configuration reference lists exactly the
 * environment variables the server reads; the CLI reference names every flag the CLI declares.
 * The pages' shell blocks are run by readme.test.ts.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { CRMS } from "../src/crm/Registry.js"
import { testStore } from "./support/store.js"

const ROOT = join(import.meta.dirname, "..", "..", "..")
const DOCS = join(ROOT, "docs")
const pages = ["README.md", ...readdirSync(DOCS).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)]

/** The text outside fenced code blocks (a `#` in a shell block is not a heading, a `[x](y)` in code not a link). */
const prose = (markdown: string): string => {
  let fenced = false
  return markdown
    .split("\n")
    .filter((line) => {
      if (/^```/.test(line)) {
        fenced = !fenced
        return false
      }
      return !fenced
    })
    .join("\n")
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export const anchorOf = (heading: string): string =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "").replaceAll(" ", "-")

const anchorsOf = (file: string): ReadonlySet<string> =>
  new Set(
    [...prose(readFileSync(file, "utf8")).matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? ""))
  )

interface Link {
  readonly page: string
  readonly target: string
}

const relativeLinks = (page: string): ReadonlyArray<Link> =>
  [...prose(readFileSync(join(ROOT, page), "utf8")).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? "")
    .filter((target) => !/^(?:[a-z]+:|<)/i.test(target))
    .map((target) => ({ page, target }))

/** What is wrong with a link, or undefined when it leads somewhere. */
const brokenBecause = ({ page, target }: Link): string | undefined => {
  const [path = "", anchor] = target.split("#")
  const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path)
  if (!file.startsWith(ROOT) || !existsSync(file)) return `${relative(ROOT, file)} does not exist`
  if (anchor === undefined || !file.endsWith(".md")) return undefined
  return anchorsOf(file).has(anchor) ? undefined : `${relative(ROOT, file)} has no heading #${anchor}`
}

describe.skipIf(testStore === "postgres")("the docs", () => {
  it("anchors headings as GitHub does", () => {
    expect(anchorOf("Real sending: Twilio, Vapi and Retell")).toBe("real-sending-twilio-vapi-and-retell")
    expect(anchorOf("The admin console: `/admin`")).toBe("the-admin-console-admin")
    expect(anchorOf("Destinations (SMS pumping and toll fraud)")).toBe("destinations-sms-pumping-and-toll-fraud")
  })

  it("finds a missing file and a missing heading", () => {
    expect(brokenBecause({ page: "README.md", target: "docs/no-such-page.md" })).toMatch(/does not exist/)
    expect(brokenBecause({ page: "README.md", target: "docs/decisions.md#no-such-heading" })).toMatch(/no heading/)
    expect(brokenBecause({ page: "docs/decisions.md", target: "../README.md#quickstart" })).toBeUndefined()
  })

  it("links only to files and headings that exist", () => {
    const links = pages.flatMap(relativeLinks)
    expect(links.length).toBeGreaterThan(20)
    const broken = links.flatMap((link) => {
      const why = brokenBecause(link)
      return why === undefined ? [] : [`${link.page}: (${link.target}) — ${why}`]
    })
    expect(broken).toEqual([])
  })

  it("reaches every docs page from the README", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8")
    const unlinked = pages.filter((page) => page !== "README.md" && !readme.includes(`](${page}`))
    expect(unlinked).toEqual([])
  })

  it("keeps the README a quickstart, not the manual", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThan(400)
  })

  it("documents in docs/configuration.md exactly the environment variables the server reads", () => {
    const readIn = (path: string) =>
      [...readFileSync(path, "utf8").matchAll(/Config\.[a-zA-Z]+(?:\((?:\s*"[^"]*",?)*\))?\(\s*"([A-Z][A-Z0-9_]*)"/g)]
        .map((match) => match[1] ?? "")
    // ServerConfig reads the server's variables; each CRM reads its own in its folder (crm/<name>/<Name>Config.ts),
    // exactly the ones its registry entry lists.
    const crmDir = join(ROOT, "packages/server/src/crm")
    const crmRead = CRMS.map((crm) => {
      const folder = join(crmDir, crm.name)
      const files = readdirSync(folder).filter((name) => name.endsWith("Config.ts"))
      return { crm, read: files.flatMap((name) => readIn(join(folder, name))) }
    })
    for (const { crm, read } of crmRead) {
      expect([...read].sort(), crm.name).toEqual(crm.variables.map((v) => v.name).sort())
    }
    const read = new Set([
      ...readIn(join(ROOT, "packages/server/src/config/ServerConfig.ts")),
      ...crmRead.flatMap((c) => c.read)
    ])
    expect(read.size).toBeGreaterThan(20)
    const reference = readFileSync(join(DOCS, "configuration.md"), "utf8")
    // The first cell of each row of the table: one or several `NAME`s.
    const documented = new Set(
      reference
        .split("\n")
        .filter((line) => line.startsWith("| `"))
        .flatMap((line) => [...(line.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1] ?? ""))
    )
    expect([...read].filter((name) => !documented.has(name)).sort()).toEqual([])
    expect([...documented].filter((name) => !read.has(name)).sort()).toEqual([])
  })

  it("names in docs/cli.md every flag the CLI declares", () => {
    const cliDir = join(ROOT, "packages/server/src/cli")
    const sources = readdirSync(cliDir, { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts"))
      .map((name) => readFileSync(join(cliDir, name), "utf8"))
      .join("\n")
    const flags = new Set([...sources.matchAll(/Options\.(?:text|choice|boolean|integer|file|date)\("([a-z0-9-]+)"/g)].map((match) => match[1] ?? ""))
    expect(flags.size).toBeGreaterThan(30)
    const reference = readFileSync(join(DOCS, "cli.md"), "utf8")
    expect([...flags].filter((flag) => !reference.includes(`--${flag}`)).sort()).toEqual([])
  })
})
