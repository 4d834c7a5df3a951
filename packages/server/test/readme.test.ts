/**
 * The shell blocks of the README and of the docs/ pages it links are run as written, so the
 * documentation cannot drift from what works.
 *
 * Every block fenced ```sh is taken from README.md, then from each docs/ page in the order the README
 * first links them, and run in that order in one bash session (a variable or function one block
 * defines is there for the next, as for a reader who followed the quickstart), against a fresh server started as
 * `pnpm start` starts it (the root package.json's own `start` command), on a free port and a temporary
 * data directory. The README's `http://localhost:8787` becomes that server's address, and the example
 * receiver `https://example.com` a local one (nothing reaches the internet); `$KEY` and `$TEST_KEY` are
 * the keys the server printed. Blocks fenced ```sh no-run are not run: those that need Twilio, Vapi,
 * a secret, another machine or a second terminal, and the set-up commands the CI itself runs.
 *
 * A block passes when each of its commands succeeds — curl counts an HTTP error as a failure here
 * (`--fail-with-body`), so a 400 cannot pass silently — and when every answer it shows as a
 * `# {...}` comment has the shape (the same fields, of the same types, and the same `status`) of an
 * answer the block printed.
 */
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer as createHttpServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { until } from "./support/poll.js"
import { freePort } from "./support/server.js"
import { testStore } from "./support/store.js"

const ROOT = join(import.meta.dirname, "..", "..", "..")
const README = join(ROOT, "README.md")
const DOCUMENTED_BASE_URL = "http://localhost:8787"
const DOCUMENTED_RECEIVER = "https://example.com"

export interface ReadmeBlock {
  /** The page it is on, relative to the repository root (set by `docBlocks`; empty from `shellBlocks`). */
  readonly file?: string
  /** The line of the opening fence, 1-based. */
  readonly line: number
  readonly run: boolean
  readonly text: string
}

/** The shell blocks of a Markdown text, in order; a shell fence that is neither `sh` nor `sh no-run` is refused. */
export const shellBlocks = (markdown: string, file = "README.md"): ReadonlyArray<ReadmeBlock> => {
  const lines = markdown.split("\n")
  const blocks: ReadmeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(.*)$/.exec(lines[i] ?? "")
    if (fence === null) continue
    const info = (fence[1] ?? "").trim()
    const end = lines.findIndex((line, index) => index > i && /^```\s*$/.test(line))
    if (end === -1) throw new Error(`${file} line ${i + 1}: a code block that is never closed`)
    if (/^(sh|bash|shell|zsh|console)\b/.test(info)) {
      if (info !== "sh" && info !== "sh no-run") {
        throw new Error(`${file} line ${i + 1}: \`\`\`${info} is neither run nor skipped by the README test; fence it \`\`\`sh (run) or \`\`\`sh no-run`)
      }
      blocks.push({ line: i + 1, run: info === "sh", text: lines.slice(i + 1, end).join("\n") })
    }
    i = end
  }
  return blocks
}

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** The JSON objects printed in a text (answers run into one another: `tee` adds no newline). */
const jsonObjectsIn = (text: string): ReadonlyArray<Json> => {
  const found: Json[] = []
  let depth = 0
  let start = -1
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === "\"") inString = false
    } else if (c === "\"" && depth > 0) inString = true
    else if (c === "{") {
      if (depth++ === 0) start = i
    } else if (c === "}" && depth > 0 && --depth === 0) {
      try {
        found.push(JSON.parse(text.slice(start, i + 1)) as Json)
      } catch {
        // not JSON after all
      }
    }
  }
  return found
}

const kindOf = (value: Json): string => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value)

/** Same fields of the same types, recursively, and the same `status`: what "the answer looks like this" promises. */
const isObject = (value: Json): value is { readonly [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const sameShape = (shown: Json, actual: Json): boolean => {
  if (kindOf(shown) !== kindOf(actual)) return false
  if (!isObject(shown)) return true
  if (!isObject(actual)) return false
  const keys = Object.keys(shown).sort()
  if (JSON.stringify(keys) !== JSON.stringify(Object.keys(actual).sort())) return false
  if ("status" in shown && shown["status"] !== actual["status"]) return false
  return keys.every((key) => sameShape(shown[key] ?? null, actual[key] ?? null))
}

/** The answers a block shows in `# {...}` comment lines (comments that are not JSON are prose). */
const shownAnswers = (block: ReadmeBlock): ReadonlyArray<{ readonly text: string; readonly json: Json }> =>
  block.text.split("\n").flatMap((line) => {
    const comment = /^\s*#\s*(\{.*\})\s*$/.exec(line)
    if (comment === null) return []
    try {
      return [{ text: comment[1] ?? "", json: JSON.parse(comment[1] ?? "") as Json }]
    } catch {
      return []
    }
  })

/** The docs/ pages the README links, in the order it first links them. */
export const linkedPages = (readme: string): ReadonlyArray<string> => [
  ...new Set([...readme.matchAll(/\]\((docs\/[\w-]+\.md)(?:#[^)]*)?\)/g)].map((match) => match[1] ?? ""))
]

/** The shell blocks of the README, then of every page it links, each with its page. */
const docBlocks = (): ReadonlyArray<ReadmeBlock> => {
  const readme = readFileSync(README, "utf8")
  return ["README.md", ...linkedPages(readme)].flatMap((file) =>
    shellBlocks(readFileSync(join(ROOT, file), "utf8"), file).map((block) => ({ ...block, file }))
  )
}

const where = (block: ReadmeBlock): string => `${block.file ?? "README.md"} line ${block.line}`

const MARK = "::parley-readme"

/** One bash script running the blocks in order, marking where each starts and which one failed. */
const script = (blocks: ReadonlyArray<ReadmeBlock>, substitute: (text: string) => string): string =>
  [
    "set -eE -o pipefail",
    // An HTTP error answer is a failed command, as a reader would take it.
    "curl() { command curl --fail-with-body \"$@\"; }",
    // `pnpm parley …` as the README writes it, where pnpm itself is not installed (it is run through npx here).
    "command -v pnpm >/dev/null || pnpm() { npx -y pnpm@10 \"$@\"; }",
    `trap 'status=$?; echo; echo "${MARK}-failed:$PARLEY_README_LINE:$status:$BASH_COMMAND"; exit $status' ERR`,
    ...blocks.flatMap((block, index) => [
      `PARLEY_README_LINE=${index}; echo; echo "${MARK}-block:${index}"`,
      substitute(block.text)
    ]),
    `echo; echo "${MARK}-done"`
  ].join("\n")

/** `pnpm start`'s command line, read from the root package.json: `node <flags> <script> <args>`. */
const startCommand = (): ReadonlyArray<string> => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
  const words = (manifest.scripts["start"] ?? "").split(/\s+/).filter((word) => word !== "")
  if (words[0] !== "node") throw new Error(`the root package.json's start script no longer runs node: ${manifest.scripts["start"]}`)
  return words.slice(1)
}

describe("shellBlocks", () => {
  it("takes sh blocks with their line, skips sh no-run, and refuses other shell fences", () => {
    const markdown = ["# t", "```sh", "echo a", "```", "```ts", "x", "```", "```sh no-run", "echo b", "```"].join("\n")
    expect(shellBlocks(markdown)).toEqual([
      { line: 2, run: true, text: "echo a" },
      { line: 8, run: false, text: "echo b" }
    ])
    expect(() => shellBlocks("text\n```bash\necho c\n```")).toThrow(/README\.md line 2: ```bash is neither run nor skipped/)
  })

  it("matches shown answers by shape and status", () => {
    expect(sameShape({ id: "1", status: "accepted", test: false }, { id: "42", status: "accepted", test: false })).toBe(true)
    expect(sameShape({ id: "2", status: "scheduled", test: false }, { error: { code: "INVALID_REQUEST", message: "", requestId: "" } })).toBe(false)
    expect(sameShape({ id: "2", status: "scheduled", test: false }, { id: "2", status: "accepted", test: false })).toBe(false)
    expect(jsonObjectsIn(`{"a":"}{"}{"b":1}\n`)).toEqual([{ a: "}{" }, { b: 1 }])
  })
})

describe("linkedPages", () => {
  it("lists the docs pages a text links, once each, in the order of their first link", () => {
    expect(linkedPages("[a](docs/b.md) [c](docs/d.md#x) [e](docs/b.md) [f](https://x.test/docs/g.md)")).toEqual(["docs/b.md", "docs/d.md"])
  })
})

// The README describes `pnpm start`, which runs on the embedded SQLite store; one pass is enough.
describe.skipIf(testStore === "postgres")("the sh blocks of README.md and its docs pages, run against a fresh pnpm start", () => {
  let child: ReturnType<typeof spawn> | undefined
  let receiver: Server | undefined
  let dataDir = ""
  let baseUrl = ""
  let receiverUrl = ""
  let keys = { live: "", test: "" }
  let output = ""

  beforeAll(async () => {
    // The receiver the webhook example subscribes: it takes every event (Parley's are signed; nothing checks them here).
    receiver = createHttpServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(204).end())
    })
    await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve))
    const address = receiver.address()
    receiverUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`

    dataDir = mkdtempSync(join(tmpdir(), "parley-readme-"))
    const port = await freePort()
    baseUrl = `http://127.0.0.1:${port}`
    const { DATABASE_URL: _database, HOST: _host, ...inherited } = process.env
    child = spawn(process.execPath, startCommand(), {
      cwd: ROOT,
      env: { ...inherited, PORT: String(port), PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    await until(async () => (output.includes("Docs:") ? true : undefined), { timeoutMs: 60_000, what: `pnpm start's demo summary (so far: ${output})` })
    // The summary is printed before the server listens.
    await until(async () => ((await fetch(`${baseUrl}/healthz`)).ok ? true : undefined), { timeoutMs: 60_000, what: "the server to answer /healthz" })
    keys = {
      live: /Live key:\s+(parley_live_\S+)/.exec(output)?.[1] ?? "",
      test: /Test key:\s+(parley_test_\S+)/.exec(output)?.[1] ?? ""
    }
  })

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => {
        child!.once("exit", resolve)
        child!.kill("SIGTERM")
      })
    }
    await new Promise((resolve) => (receiver === undefined ? resolve(undefined) : receiver.close(resolve)))
    if (dataDir !== "") rmSync(dataDir, { recursive: true, force: true })
  })

  it("every sh block succeeds, in order, and shows answers shaped like the ones it gets", async () => {
    expect(keys.live, output).toMatch(/^parley_live_/)
    expect(keys.test, output).toMatch(/^parley_test_/)
    const blocks = docBlocks().filter((block) => block.run)
    expect(blocks.length).toBeGreaterThan(0)
    const substitute = (text: string) =>
      text.replaceAll(DOCUMENTED_BASE_URL, baseUrl).replaceAll(DOCUMENTED_RECEIVER, receiverUrl)
    const { DATABASE_URL: _database, HOST: _host, ...blockEnv } = process.env
    const scriptFile = join(dataDir, "readme-blocks.sh")
    writeFileSync(scriptFile, script(blocks, substitute))
    const run = await new Promise<{ code: number; stdout: string }>((resolve) => {
      // Through a real pipe (`| cat`), not the socket Node gives a child: `tee /dev/stderr` cannot open a socket.
      execFile("sh", ["-c", "bash \"$1\" 2>&1 | cat", "sh", scriptFile], {
        cwd: ROOT,
        timeout: 240_000,
        maxBuffer: 16 * 1024 * 1024,
        env: {
          ...blockEnv,
          // `node` in a block is the Node running the tests (the pinned one); `pnpm parley` acts on this server's data.
          PATH: `${dirname(process.execPath)}${delimiter}${process.env["PATH"] ?? ""}`,
          PARLEY_DATA_DIR: dataDir,
          KEY: keys.live,
          TEST_KEY: keys.test
        }
      }, (error, stdout) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout }))
    })

    // What each block printed, by the line of its fence.
    const printed = new Map<number, string>()  // by the block's index in `blocks`
    for (const part of run.stdout.split(`\n${MARK}-block:`).slice(1)) {
      const newline = part.indexOf("\n")
      printed.set(Number(part.slice(0, newline)), part.slice(newline + 1))
    }
    const failure = new RegExp(`${MARK}-failed:(\\d+):(\\d+):(.*)`).exec(run.stdout)
    if (failure !== null) {
      const index = Number(failure[1])
      const block = blocks[index]
      const said = (printed.get(index) ?? "").split(`${MARK}-failed`)[0]?.trim()
      expect.fail(`${block === undefined ? `block ${index}` : where(block)}: the block's command \`${failure[3]}\` exited ${failure[2]}. It printed:\n${said}`)
    }
    expect(run.stdout, `the docs' blocks did not run to the end (exit ${run.code}):\n${run.stdout}`).toContain(`${MARK}-done`)

    for (const [index, block] of blocks.entries()) {
      const answers = jsonObjectsIn(printed.get(index) ?? "")
      for (const shown of shownAnswers(block)) {
        if (!answers.some((answer) => sameShape(shown.json, answer))) {
          expect.fail(
            `${where(block)}: the block shows the answer ${shown.text}, but printed none of that shape:\n${printed.get(index) ?? ""}`
          )
        }
      }
    }
  })
})
