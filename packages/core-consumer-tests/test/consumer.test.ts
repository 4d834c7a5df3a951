// @parley/core as another TypeScript service meets it. The core is packed as it would be published;
// the tarball is checked by publint and arethetypeswrong; then one temporary project outside the
// workspace installs it on each end of its peer range (the lowest effect and @effect/platform the
// range allows, and the newest it resolves to today), type-checks the programs in ../consumer under
// `module: nodenext` and `moduleResolution: bundler` with `strict`, and runs them: the Promise client,
// the Effect client and a CommonJS require against a real Parley server, and the embedded core on its
// in-memory ports. The programs run on the Node the workspace pins (24) and, where the machine has one
// on PATH, on an older Node too (the system's): the range in the core's `engines` is what they prove.
import { execFile, execFileSync } from "node:child_process"
import { accessSync, appendFileSync, constants, cpSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..", "..", "..")
const coreDir = join(root, "packages", "core")
const template = join(here, "..", "consumer")

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * Every child runs with this Node's folder first on PATH, so a tool started through a `.bin` shim
 * (tsc, publint, attw) or a script that runs `node` gets the pinned Node too.
 */
const childPath = `${dirname(process.execPath)}${delimiter}${process.env["PATH"] ?? ""}`

const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> =>
  new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, PATH: childPath, ...env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1
      resolve({ code, stdout, stderr })
    })
  })

const succeed = async (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = {}) => {
  const result = await run(command, args, cwd, env)
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) exited ${result.code}\n${result.stdout}\n${result.stderr}`)
  }
  return result.stdout
}

const majorOf = (version: string) => Number(/^v?(\d+)/.exec(version)?.[1] ?? 0)

/** A `node` on PATH older than the one running the tests (the machine's own, behind the pinned one pnpm puts first). */
const olderNode = (): { readonly path: string; readonly version: string } | undefined => {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    const path = join(dir, "node")
    try {
      accessSync(path, constants.X_OK)
      const version = execFileSync(path, ["--version"], { encoding: "utf8" }).trim()
      if (majorOf(version) < majorOf(process.version)) return { path, version }
    } catch {
      // Not there, or not a Node.
    }
  }
  return undefined
}

/** The Nodes the consumer's programs run on: the pinned one, and an older one where the machine has it. */
const runtimes: ReadonlyArray<{ readonly path: string; readonly version: string }> = (() => {
  const older = olderNode()
  if (older === undefined) {
    const notice = `core-consumer-tests: no Node older than ${process.version} on PATH; the packed @parley/core ran on ${process.version} only, not on the low end of its engines range.`
    const file = process.env["PARLEY_TEST_NOTICES"]
    if (file !== undefined) appendFileSync(file, `${notice}\n`)
    else process.stderr.write(`${notice}\n`)
  }
  return [{ path: process.execPath, version: process.version }, ...(older === undefined ? [] : [older])]
})()

/** The pnpm running this test (pnpm sets npm_execpath for its scripts), else pnpm 10 through npx. */
const pnpm = (args: ReadonlyArray<string>, cwd: string) => {
  const self = process.env["npm_execpath"]
  return self !== undefined && /pnpm/.test(self)
    ? succeed(process.execPath, [self, ...args], cwd)
    : succeed("npx", ["-y", "pnpm@10", ...args], cwd)
}

/** Versions the workspace itself pins, so the consumer's TypeScript is the one the workspace is checked with. */
const pinned = (name: string): string => {
  const manifest: { devDependencies?: Record<string, string> } = JSON.parse(
    readFileSync(join(here, "..", "package.json"), "utf8")
  )
  const version = manifest.devDependencies?.[name]
  if (version === undefined) throw new Error(`${name} is not pinned in package.json`)
  return version
}

/** The lowest version a caret range allows; the peer ranges are written as carets so both ends are plain to read. */
const lowest = (range: string): string => {
  const match = /^\^(\d+\.\d+\.\d+)$/.exec(range)
  if (match?.[1] === undefined) throw new Error(`peer range ${range} is not a caret range`)
  return match[1]
}

const installedVersion = (project: string, name: string): string => {
  const manifest: { version: string } = JSON.parse(readFileSync(join(project, "node_modules", name, "package.json"), "utf8"))
  return manifest.version
}

/** Where `name` resolves from a directory, as a real path: one copy of effect means the same path from both places. */
const resolvedFrom = (dir: string, name: string): string =>
  realpathSync(createRequire(join(realpathSync(dir), "package.json")).resolve(name))

let work = ""
let tarball = ""
let peers: Readonly<Record<string, string>> = {}
let server: TestServer
let demo: DemoSummary

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "parley-consumer-"))
  // `pnpm pack` runs the core's prepack (its tsup build) and applies publishConfig, as a publish does.
  await pnpm(["pack", "--pack-destination", work], coreDir)
  const packed = readdirSync(work).find((name) => name.endsWith(".tgz"))
  if (packed === undefined) throw new Error("pnpm pack wrote no tarball")
  tarball = join(work, packed)
  await succeed("tar", ["-xzf", tarball, "-C", work], work)
  const manifest: { peerDependencies?: Record<string, string> } = JSON.parse(
    readFileSync(join(work, "package", "package.json"), "utf8")
  )
  peers = manifest.peerDependencies ?? {}
  server = await TestServer.start()
  demo = await server.demo()
})

afterAll(async () => {
  await server?.dispose()
  if (work !== "") rmSync(work, { recursive: true, force: true })
})

describe("the packed @parley/core", () => {
  it("ships only its build, with effect and @effect/platform as peers and two pinned libraries", () => {
    expect(Object.keys(peers).sort()).toEqual(["@effect/platform", "effect"])
    const manifest: { dependencies?: Record<string, unknown>; exports: Record<string, unknown> } = JSON.parse(
      readFileSync(join(work, "package", "package.json"), "utf8")
    )
    // Destination rules (libphonenumber-js: number types and regions) and webhook address classification
    // (ipaddr.js) are the core's own rules, so their libraries ship with it, pinned; nothing else does.
    expect(Object.keys(manifest.dependencies ?? {}).sort()).toEqual(["ipaddr.js", "libphonenumber-js"])
    expect(Object.values(manifest.dependencies ?? {}).every((v) => /^\d+\.\d+\.\d+$/.test(String(v)))).toBe(true)
    expect(Object.keys(manifest.exports).sort()).toEqual([".", "./domain", "./package.json", "./testing"])
    expect(readdirSync(join(work, "package")).sort()).toEqual(["README.md", "dist", "package.json"])
  })

  it("passes publint in strict mode", async () => {
    const bin = join(here, "..", "node_modules", ".bin", "publint")
    const out = await succeed(bin, [join(work, "package"), "--strict", "--pack", "false"], work)
    expect(out).toContain("All good")
  })

  it("resolves with the right types in every module system (arethetypeswrong)", async () => {
    const bin = join(here, "..", "node_modules", ".bin", "attw")
    const result = await run(bin, [tarball, "--format", "json"], work)
    const report: { analysis?: { problems?: ReadonlyArray<unknown> } } = JSON.parse(result.stdout)
    expect(report.analysis?.problems ?? ["no analysis"]).toEqual([])
    expect(result.code).toBe(0)
  })
})

const ends = [
  { end: "lowest", pick: (range: string) => lowest(range) },
  { end: "highest", pick: (range: string) => range }
] as const

describe.each(ends)("a consumer on the $end end of the peer range", ({ end, pick }) => {
  const project = () => join(work, "consumer")

  beforeAll(async () => {
    // One project for the run: the second end reinstalls over the first.
    cpSync(template, project(), { recursive: true })
    rmSync(join(project(), "dist"), { recursive: true, force: true })
    rmSync(join(project(), "pnpm-lock.yaml"), { force: true })
    writeFileSync(
      join(project(), "package.json"),
      JSON.stringify({
        name: "parley-consumer",
        private: true,
        type: "module",
        dependencies: {
          "@parley/core": `file:${tarball}`,
          ...Object.fromEntries(Object.entries(peers).map(([name, range]) => [name, pick(range)])),
          "@types/node": pinned("@types/node"),
          typescript: pinned("typescript")
        }
      })
    )
    await pnpm(
      ["install", "--no-frozen-lockfile", "--config.confirm-modules-purge=false", "--config.auto-install-peers=false"],
      project()
    )
  })

  it("installs one copy of effect, the consumer's", () => {
    const effect = installedVersion(project(), "effect")
    const range = peers["effect"] ?? ""
    if (end === "lowest") expect(effect).toBe(lowest(range))
    else expect(effect.split(".")[0]).toBe(lowest(range).split(".")[0])
    const core = join(project(), "node_modules", "@parley", "core")
    expect(resolvedFrom(core, "effect")).toBe(resolvedFrom(project(), "effect"))
    expect(resolvedFrom(core, "@effect/platform")).toBe(resolvedFrom(project(), "@effect/platform"))
  })

  it("type-checks with tsc --strict under module nodenext and under moduleResolution bundler", async () => {
    const tsc = join(project(), "node_modules", ".bin", "tsc")
    await succeed(tsc, ["-p", "tsconfig.nodenext.json"], project())
    await succeed(tsc, ["-p", "tsconfig.bundler.json"], project())
  })

  it.each(runtimes)("runs the Promise client against a real server on Node $version", async ({ path }) => {
    const env = { PARLEY_URL: server.baseUrl, PARLEY_API_KEY: demo.keys.live }
    const out = JSON.parse(await succeed(path, ["dist/promise-client.js"], project(), env))
    expect(out).toEqual({
      distinct: true,
      replayed: true,
      status: expect.any(String),
      body: "Hello from a consumer",
      listed: true,
      notFound: expect.stringContaining("999999999"),
      invalid: true,
      unreachable: true
    })
  })

  it.each(runtimes)("runs the Effect client and a CommonJS require against the same server on Node $version", async ({ path }) => {
    const env = { PARLEY_URL: server.baseUrl, PARLEY_API_KEY: demo.keys.live }
    expect(JSON.parse(await succeed(path, ["dist/effect-client.js"], project(), env))).toEqual({
      bots: demo.bots.filter((bot) => bot.active).length,
      missing: "NotFound"
    })
    expect(JSON.parse(await succeed(path, ["dist/require.cjs"], project(), env))).toEqual({
      numbers: demo.numbers.length,
      cjs: true
    })
  })

  it.each(runtimes)("runs the embedded core on its in-memory ports on Node $version", async ({ path }) => {
    expect(JSON.parse(await succeed(path, ["dist/embedded.js"], project()))).toEqual({
      status: "Queued",
      preview: "Hello from an embedded Parley"
    })
  })
})
