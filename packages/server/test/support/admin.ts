/**
 * The `parley` admin CLI run inside the test process: the same commands, the
 * same argument parsing, the same layers and the same output as
 * `bin/parley.mjs`, against a test server's store — without starting a
 * process (one costs 1–4 s; a suite makes dozens of admin calls).
 *
 * For tests where the CLI is only how the set-up is done (create an
 * organisation, mint a key, change a setting). Where the CLI itself is under
 * test (cli.test.ts, first-contact, hardening's refusals) the real process
 * runs, through `TestServer.cli`.
 *
 * Every call builds the application afresh from the environment the process
 * would get and releases it afterwards, as a process would: nothing is cached
 * between calls, and the server sees the change through the store alone.
 */
import { ValidationError } from "@effect/cli"
import { Cause, ConfigProvider, Console, Effect, Exit } from "effect"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"
import { ProcessLive } from "../../src/AppLayer.js"
import { cli, describeFailure } from "../../src/cli/Program.js"

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const collector = () => {
  let text = ""
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += chunk.toString()
      done()
    }
  })
  return { stream, read: () => text }
}

/** An Effect Console writing to the given streams, as the default one writes to the process's. */
const capturingConsole = (stdout: Writable, stderr: Writable): Console.Console => {
  const target = new NodeConsole({ stdout, stderr, colorMode: false })
  const sync = (f: () => void) => Effect.sync(f)
  return {
    [Console.TypeId]: Console.TypeId,
    assert: (condition, ...args) => sync(() => target.assert(condition, ...args)),
    clear: sync(() => target.clear()),
    count: (label) => sync(() => target.count(label)),
    countReset: (label) => sync(() => target.countReset(label)),
    debug: (...args) => sync(() => target.debug(...args)),
    dir: (item, options) => sync(() => target.dir(item, options)),
    dirxml: (...args) => sync(() => target.dirxml(...args)),
    error: (...args) => sync(() => target.error(...args)),
    group: (options) =>
      sync(() => (options?.collapsed === true ? target.groupCollapsed(options.label) : target.group(options?.label))),
    groupEnd: sync(() => target.groupEnd()),
    info: (...args) => sync(() => target.info(...args)),
    log: (...args) => sync(() => target.log(...args)),
    table: (data, properties) => sync(() => target.table(data, properties)),
    time: (label) => sync(() => target.time(label)),
    timeEnd: (label) => sync(() => target.timeEnd(label)),
    timeLog: (label, ...args) => sync(() => target.timeLog(label, ...args)),
    trace: (...args) => sync(() => target.trace(...args)),
    warn: (...args) => sync(() => target.warn(...args)),
    unsafe: target
  }
}

/**
 * Runs `parley <args>` in this process with `env` as its environment; answers
 * as the process would: exit code, stdout, stderr.
 */
export const runAdmin = async (env: Readonly<Record<string, string | undefined>>, args: ReadonlyArray<string>): Promise<CliResult> => {
  const stdout = collector()
  const stderr = collector()
  const console = capturingConsole(stdout.stream, stderr.stream)
  const defined = Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined)
  const program = cli(["node", "parley", ...args]).pipe(
    Effect.provide(ProcessLive),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(defined))),
    Effect.withConsole(console)
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) return { code: 0, stdout: stdout.read(), stderr: stderr.read() }
  const failure = Cause.squash(exit.cause)
  // @effect/cli has already printed its own message for bad arguments.
  const said = ValidationError.isValidationError(failure) ? "" : `parley: ${describeFailure(failure)}\n`
  return { code: 1, stdout: stdout.read(), stderr: stderr.read() + said }
}
