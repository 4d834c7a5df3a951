/**
 * Writes the OpenAPI 3.1 document of /api/v1, derived from the contract, as
 * pretty-printed JSON.
 *
 *   pnpm openapi                 # writes openapi.json at the repository root
 *   pnpm openapi path/to/out.json
 *
 * A relative path is taken from the directory the command was run in.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { openApiDocument } from "../src/contract/OpenApiDocument.js"

/** `openapi.json` at the repository root. */
export const DEFAULT_OUTPUT = fileURLToPath(new URL("../../../openapi.json", import.meta.url))

/** Writes the document to `target` (default: the repository root) and answers the absolute path written. */
export const writeOpenApi = (target: string = DEFAULT_OUTPUT, from: string = process.cwd()): string => {
  const path = resolve(from, target)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${JSON.stringify(openApiDocument(), null, 2)}\n`)
  return path
}

/** The command: the optional first argument is the output path; prints where it wrote. */
export const main = (args: ReadonlyArray<string>, log: (line: string) => void = console.log): string => {
  // pnpm runs package scripts in the package's directory; INIT_CWD is where the user ran it.
  const path = writeOpenApi(args[0] ?? DEFAULT_OUTPUT, process.env["INIT_CWD"] ?? process.cwd())
  log(`Wrote the OpenAPI document to ${path}`)
  return path
}

const invokedPath = process.argv[1]
if (invokedPath !== undefined && resolve(invokedPath) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2))
}
