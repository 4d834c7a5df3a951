import { defineConfig } from "tsup"

// The `parley` command as one ES module (dist/parley.mjs), which bin/parley.mjs runs while it is newer
// than the sources. Running the bundle instead of TypeScript through tsx halves the server's memory
// (no loader thread, no per-module compile caches) and starts it in about a second.
// - Everything is bundled but native code (the SQLite driver; pg's optional native binding), so
//   nothing is resolved or compiled at start.
// - Whitespace is minified (V8 keeps the whole source in memory, and comments with non-ASCII
//   characters would make it a two-byte string); identifiers are not, so profiles stay readable.
// - No keepNames: it wraps every named closure in `__name(fn, "…")`, an Object.defineProperty each
//   time the closure is created — 120 per GET and ~300 per POST at run time. Nothing reads function
//   names (errors carry their `_tag`); a name esbuild deduplicated (`map19`) only shows in a profile.
// - Bundled CommonJS dependencies call `require` for Node's built-ins, which an ES module lacks.
export default defineConfig({
  entry: { parley: "src/cli/main.ts" },
  format: ["esm"],
  outExtension: () => ({ js: ".mjs" }),
  platform: "node",
  target: "node24",
  // A package matched by noExternal is bundled even when `external` names it, hence the pattern.
  noExternal: [/^(?!better-sqlite3$|pg-native$)/],
  external: ["better-sqlite3", "pg-native"],
  minifyWhitespace: process.env["PARLEY_BUNDLE_READABLE"] === undefined,
  minifySyntax: process.env["PARLEY_BUNDLE_READABLE"] === undefined,
  sourcemap: true,
  // One chunk apart: the OpenTelemetry SDK, imported only when traces are exported (Tracing.ts).
  splitting: true,
  clean: true,
  esbuildOptions: (options) => {
    options.charset = "ascii"
    options.banner = {
      js: "import { createRequire as __parleyCreateRequire } from 'node:module'; " +
        "const require = __parleyCreateRequire(import.meta.url);"
    }
  }
})
