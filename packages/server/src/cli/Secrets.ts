/**
 * Where `parley providers set` takes a credential from. A flag's value shows in `ps` and in shell
 * history, so a secret is better read from standard input (`--auth-token-stdin`), from an environment
 * variable the operator names (`--auth-token-env NAME`), or typed at a prompt that does not echo it
 * (when standard input is a terminal and no other source was given). The flag with the value itself
 * still works, with a warning.
 */
import { Options } from "@effect/cli"
import { createInterface } from "node:readline"
import { Writable } from "node:stream"
import { Console, Effect, Option } from "effect"
import { fail } from "./Input.js"

/** The three ways one secret can be given on the command line. */
export const secretOptions = (name: string, description: string) => ({
  value: Options.text(name).pipe(
    Options.withDescription(`${description} (shows in ps and shell history: prefer --${name}-stdin or --${name}-env)`),
    Options.optional
  ),
  stdin: Options.boolean(`${name}-stdin`).pipe(Options.withDescription(`Read ${description} from standard input`)),
  env: Options.text(`${name}-env`).pipe(
    Options.withDescription(`Read ${description} from this environment variable`),
    Options.optional
  )
})

export interface SecretInput {
  readonly value: Option.Option<string>
  readonly stdin: boolean
  readonly env: Option.Option<string>
}

const readStdin = Effect.async<string, Error>((resume) => {
  let text = ""
  process.stdin.setEncoding("utf8")
  process.stdin.on("data", (chunk: string) => {
    text += chunk
  })
  process.stdin.once("end", () => resume(Effect.succeed(text)))
  process.stdin.once("error", (error) => resume(Effect.fail(error)))
})

/** Reads a line from the terminal without echoing it. */
const prompt = (question: string) =>
  Effect.async<string>((resume) => {
    process.stderr.write(question)
    const silent = new Writable({ write: (_chunk, _encoding, done) => done() })
    const reader = createInterface({ input: process.stdin, output: silent, terminal: true })
    reader.question("", (answer) => {
      reader.close()
      process.stderr.write("\n")
      resume(Effect.succeed(answer))
    })
  })

/** Only one secret can come from standard input; this says which flag claimed it. */
export const oneFromStdin = (inputs: ReadonlyArray<readonly [string, SecretInput]>) => {
  const claimed = inputs.filter(([, input]) => input.stdin).map(([flag]) => `--${flag}-stdin`)
  return claimed.length > 1 ? fail(`only one secret can be read from standard input (${claimed.join(", ")})`) : Effect.void
}

/**
 * The secret, from wherever the operator gave it; None when nowhere (the caller decides whether it is
 * required). Trailing line breaks are dropped (`echo` and here-strings add one).
 */
export const resolveSecret = (flag: string, input: SecretInput, interactive: boolean) =>
  Effect.gen(function*() {
    const sources = [Option.isSome(input.value), input.stdin, Option.isSome(input.env)].filter(Boolean).length
    if (sources > 1) return yield* fail(`give --${flag} one way only: --${flag}, --${flag}-stdin or --${flag}-env`)
    let value: string | undefined
    if (input.stdin) {
      value = yield* Effect.catchAll(readStdin, () => fail(`--${flag}-stdin: standard input could not be read`))
    } else if (Option.isSome(input.env)) {
      const name = input.env.value
      // The operator names the variable at run time: this is input, not Parley's configuration.
      value = process.env[name]
      if (value === undefined || value === "") return yield* fail(`--${flag}-env ${name}: that environment variable is not set`)
    } else if (Option.isSome(input.value)) {
      yield* Console.error(
        `warning: --${flag} on the command line shows in ps and shell history; use --${flag}-stdin or --${flag}-env NAME`
      )
      value = input.value.value
    } else if (interactive) {
      value = yield* prompt(`${flag}: `)
    }
    if (value === undefined) return Option.none<string>()
    const trimmed = value.replace(/[\r\n]+$/, "").trim()
    if (trimmed === "") return yield* fail(`--${flag} must not be empty`)
    return Option.some(trimmed)
  })

/** Whether a prompt can be shown: standard input is a terminal. */
export const isInteractive = (): boolean => process.stdin.isTTY === true
