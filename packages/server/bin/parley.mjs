#!/usr/bin/env node
// Parley's admin CLI and server. It runs the bundle (dist/parley.mjs, built by `pnpm install` and
// `pnpm build`) when the bundle is newer than everything it is built from; otherwise it runs the
// TypeScript sources through tsx, so an edit never runs stale code. The bundle starts in about a
// second and needs half the memory; tsx compiles every module at start.
//
// Parley runs on Node 24 or newer: the workspace pins it (the root devDependency `node`), every `pnpm`
// script runs on it, and the native SQLite driver is built for it. Started by an older Node (someone
// typing `node packages/server/bin/parley.mjs` on a machine whose Node is 20), it says so in one line
// instead of failing deep inside the driver with a NODE_MODULE_VERSION stack trace.
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const NEEDED_MAJOR = 24
if (Number(process.versions.node.split(".")[0]) < NEEDED_MAJOR) {
  process.stderr.write(
    `parley: Parley needs Node ${NEEDED_MAJOR} or newer and this is Node ${process.version}; ` +
      "run it as `pnpm parley …` or `pnpm start`, which use the Node 24 the workspace pins (installed by `pnpm install`).\n"
  )
  process.exit(1)
}

const server = fileURLToPath(new URL("..", import.meta.url))
const root = join(server, "..", "..")
const bundle = join(server, "dist", "parley.mjs")

/** Last modification of a path; a missing one counts as never modified. */
const modifiedMs = (path) => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return Number.NEGATIVE_INFINITY
  }
}

const newestIn = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    return Math.max(newest, entry.isDirectory() ? newestIn(path) : modifiedMs(path))
  }, modifiedMs(dir))

const inputs = () =>
  Math.max(
    newestIn(join(server, "src")),
    newestIn(join(root, "packages", "core", "src")),
    modifiedMs(join(server, "package.json")),
    modifiedMs(join(server, "tsup.config.ts")),
    modifiedMs(join(root, "pnpm-lock.yaml"))
  )

if (modifiedMs(bundle) > inputs()) {
  await import(pathToFileURL(bundle).href)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/cli/main.ts")
}
