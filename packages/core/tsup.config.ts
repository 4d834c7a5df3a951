import { defineConfig } from "tsup"

// The workspace consumes @parley/core from source; this build is what the packed package ships
// (see publishConfig in package.json): one entry per public subpath, ESM + CJS + declarations.
// - `internal` is not an entry: it exists for this workspace only.
// - Splitting in both formats, so code two subpaths share (an error class, a service tag) exists
//   once and `instanceof` holds across `@parley/core` and `@parley/core/domain`, in CJS too.
// - No source maps: they would point at sources the package does not ship.
export default defineConfig({
  entry: {
    index: "src/index.ts",
    domain: "src/domain.ts",
    testing: "src/testing.ts"
  },
  format: ["esm", "cjs"],
  dts: true,
  splitting: true,
  sourcemap: false,
  clean: true,
  target: "node20"
})
