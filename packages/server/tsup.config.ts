import { defineConfig } from "tsup"

// The `parley` command as one ES module (dist/parley.mjs), which bin/parley.mjs runs while it is newer
// than the sources. Running the bundle instead of TypeScript through tsx halves the server's memory
// (no loader thread, no per-module compile caches) and starts it in about a second.
// - Everything is bundled but native code (the SQLite driver; pg's optional native binding), so
//   nothing is resolved or compiled at start.
// - Whitespace is minified, names are kept (profiles and error names stay readable): V8 keeps the
//   whole source in memory, and comments with non-ASCII characters would make it a two-byte string.
// - Bundled CommonJS dependencies call `require` for Node's built-ins, which an ES module lacks.
export default defineConfig({
  entry: { parley: "src/cli/main.ts" },
  format: ["esm"],
  outExtension: () => ({ js: ".mjs" }),
  platform: "node",
  target: "node20",
  // A package matched by noExternal is bundled even when `external` names it, hence the pattern.
  noExternal: [/^(?!better-sqlite3$|pg-native$)/],
  external: ["better-sqlite3", "pg-native"],
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  sourcemap: true,
  splitting: false,
  clean: true,
  esbuildOptions: (options) => {
    options.charset = "ascii"
    options.banner = {
      js: "import { createRequire as __parleyCreateRequire } from 'node:module'; " +
        "const require = __parleyCreateRequire(import.meta.url);"
    }
  }
})
