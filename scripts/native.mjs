/**
 * The root `postinstall`: makes sure better-sqlite3 loads in the pinned Node 24 (the root devDependency
 * `node`, which pnpm puts first on the PATH of every script, this one included).
 *
 * better-sqlite3 13 ships prebuilt Node-API binaries in its package (linux, macOS and Windows on x64 and
 * arm64; on Linux, glibc 2.34 or newer, or musl), so on those machines there is nothing to build and this
 * script is a quick check. pnpm never builds it (`ignoredBuiltDependencies`): it would compile it for the
 * Node that runs pnpm, against whatever headers the machine's npm config names. This script
 *   1. finds every copy of better-sqlite3 the install holds (pnpm-lock.yaml pins one version, which the
 *      root, packages/server and @effect/sql-sqlite-node all load from one folder);
 *   2. checks, in a child process of the running Node, that each copy loads, opens a database and runs
 *      statements; a copy that does is left alone;
 *   3. otherwise (or when PARLEY_NATIVE_BUILD=1) compiles it from source with node-gyp (a root
 *      devDependency) against the running Node's own headers (the npm package node-<platform>-<arch>
 *      that the `node` package installs ships them in include/node), into build/Release, which
 *      better-sqlite3 prefers over its prebuilt binaries;
 *   4. checks again, and fails the install with a plain message if it still does not load.
 *
 * Run it again by hand with `pnpm run postinstall`.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { availableParallelism, homedir, tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"

const root = join(import.meta.dirname, "..")
const say = (line) => process.stdout.write(`native: ${line}\n`)
const fail = (lines) => {
  process.stderr.write(`\nnative: ${lines.join("\nnative: ")}\n\n`)
  process.exit(1)
}

const pinned = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies?.node
if (process.version !== `v${pinned}`) {
  fail([
    `this install runs on Node ${process.version}, not the pinned Node ${pinned} (the root devDependency "node").`,
    "pnpm puts the pinned Node first on the PATH of its scripts once the `node` package is installed;",
    "its install script (which fetches the binary from the npm registry) may have failed or been skipped:",
    "check that `node` is listed in onlyBuiltDependencies in pnpm-workspace.yaml, then run `pnpm install` again."
  ])
}
const workspace = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8")
const checked = /^nodeVersion:\s*["']?([^"'\s]+)/m.exec(workspace)?.[1]
if (checked !== pinned) {
  fail([`pnpm-workspace.yaml sets nodeVersion ${checked ?? "(none)"}; it must equal the pinned Node ${pinned} (root devDependency "node").`])
}

/** Every better-sqlite3 package folder the install holds, as real paths. */
const copies = () => {
  const found = new Set()
  const lockfile = readFileSync(join(root, "pnpm-lock.yaml"), "utf8")
  for (const [, key] of lockfile.matchAll(/^ {2}'?(better-sqlite3@[^':\s]+)'?:\s*$/gm)) {
    const dir = join(root, "node_modules", ".pnpm", key, "node_modules", "better-sqlite3")
    if (existsSync(join(dir, "package.json"))) found.add(realpathSync(dir))
  }
  // What the code that loads it resolves, in case the store is laid out differently.
  const resolve = (from, name) => {
    try {
      return createRequire(join(from, "package.json")).resolve(`${name}/package.json`)
    } catch {
      return undefined // Not installed there.
    }
  }
  const server = join(root, "packages", "server")
  const driver = resolve(server, "@effect/sql-sqlite-node")
  for (const from of [root, server, ...(driver === undefined ? [] : [dirname(driver)])]) {
    const manifest = resolve(from, "better-sqlite3")
    if (manifest !== undefined) found.add(realpathSync(dirname(manifest)))
  }
  return [...found]
}

/** Loads the copy in a fresh child of this Node and uses it; undefined when that works, else why not. */
const loadError = (dir) => {
  const probe = [
    `const Database = require(${JSON.stringify(dir)})`,
    `const db = new Database(":memory:")`,
    `db.exec("create table t (n integer)")`,
    `for (let i = 0; i < 200; i++) db.prepare("insert into t values (?)").run(i)`,
    `if (db.prepare("select count(*) as n from t").get().n !== 200) throw new Error("wrong count")`,
    `globalThis.gc()`
  ].join(";")
  const run = spawnSync(process.execPath, ["--expose-gc", "-e", probe], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  if (run.error !== undefined) return run.error.message
  if (run.status === 0) return undefined
  const lines = `${run.stderr}`.split("\n").filter((line) => line.trim() !== "")
  return lines.find((line) => /Error|error:|Assertion/.test(line)) ?? lines[0] ?? `exit ${run.status ?? run.signal}`
}

const hasHeaders = (dir) => existsSync(join(dir, "include", "node", "node.h"))

/**
 * A folder holding this Node's headers as include/node (what node-gyp's --nodedir takes). The binary
 * comes from the npm package node-<platform>-<arch>, which ships them beside bin/; but when pnpm restores
 * the `node` package from its cache it keeps bin/node and not that package. Then the same package is
 * fetched once with npm (from its cache when it has it) and its include/ kept under ~/.cache/parley.
 */
const headers = () => {
  const candidates = [
    dirname(dirname(realpathSync(process.execPath))),
    join(dirname(dirname(process.execPath)), "node_modules", `node-${process.platform}-${process.arch}`)
  ]
  const found = candidates.find(hasHeaders)
  if (found !== undefined) return found
  const kept = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "parley", "node-headers", process.version)
  if (hasHeaders(kept)) return kept
  const name = `node-${process.platform}-${process.arch}@${process.versions.node}`
  say(`fetching the headers of Node ${process.version} (npm package ${name})…`)
  const work = mkdtempSync(join(tmpdir(), "parley-node-headers-"))
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm"
    const packed = spawnSync(npm, ["pack", name, "--silent", "--pack-destination", work], { encoding: "utf8", cwd: work })
    const tarball = readdirSync(work).find((file) => file.endsWith(".tgz"))
    if (packed.error !== undefined || packed.status !== 0 || tarball === undefined) {
      const why = (packed.error?.message ?? packed.stderr ?? "").trim().split("\n").slice(-5)
      fail([`cannot build better-sqlite3 for Node ${process.version}: its headers are not installed and \`npm pack ${name}\` failed:`, ...why])
    }
    const untar = spawnSync("tar", ["-xzf", join(work, tarball), "-C", work, "package/include"], { encoding: "utf8" })
    if (untar.status !== 0 || !hasHeaders(join(work, "package"))) {
      fail([`cannot unpack the headers from ${tarball}: ${(untar.error?.message ?? untar.stderr ?? "").trim()}`])
    }
    mkdirSync(kept, { recursive: true })
    rmSync(join(kept, "include"), { recursive: true, force: true })
    renameSync(join(work, "package", "include"), join(kept, "include"))
    return kept
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

const build = (dir, version) => {
  const nodedir = headers()
  let gyp
  try {
    gyp = createRequire(join(root, "package.json")).resolve("node-gyp/bin/node-gyp.js")
  } catch {
    fail(["node-gyp (a root devDependency) is not installed; run `pnpm install` again."])
  }
  const jobs = String(Math.max(1, Math.min(2, availableParallelism())))
  say(`building better-sqlite3 ${version} from source for Node ${process.version}; about a minute on 2 cores…`)
  const started = Date.now()
  // --force_build=1: better-sqlite3's binding.gyp otherwise skips the compile when a prebuilt binary exists.
  const args = [gyp, "rebuild", "--release", "--force_build=1", `--nodedir=${nodedir}`, `--jobs=${jobs}`]
  const run = spawnSync(process.execPath, args, {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      // The machine's npm config may name other headers (nodedir); this Node's own win.
      npm_config_nodedir: nodedir,
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`
    }
  })
  const seconds = Math.round((Date.now() - started) / 1000)
  if (run.error !== undefined || run.status !== 0) {
    const output = `${run.stdout ?? ""}${run.stderr ?? ""}`.split("\n").filter((line) => line.trim() !== "")
    fail([
      `building better-sqlite3 for Node ${process.version} failed after ${seconds} s (${run.error?.message ?? `node-gyp exit ${run.status}`}).`,
      "It needs python3, make and a C++ compiler (Debian: apt-get install python3 make g++). node-gyp's last lines:",
      ...output.slice(-40).map((line) => `  ${line}`),
      "Run it again with `pnpm run postinstall`."
    ])
  }
  say(`built better-sqlite3 in ${seconds} s`)
}

const found = copies()
if (found.length === 0) fail(["better-sqlite3 is not installed (it is a dependency of the root and of packages/server)."])
const forced = process.env.PARLEY_NATIVE_BUILD === "1"
for (const dir of found) {
  const version = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version
  const before = forced ? "PARLEY_NATIVE_BUILD=1" : loadError(dir)
  if (before === undefined) {
    say(`better-sqlite3 ${version} loads in Node ${process.version}`)
    continue
  }
  say(forced ? "PARLEY_NATIVE_BUILD=1: building from source" : `better-sqlite3 ${version} as installed does not load in Node ${process.version}: ${before}`)
  build(dir, version)
  const after = loadError(dir)
  if (after !== undefined) fail([`better-sqlite3 ${version} was built but still does not load in Node ${process.version}: ${after}`])
  say(`better-sqlite3 ${version} loads in Node ${process.version}`)
}
