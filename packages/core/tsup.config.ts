import { defineConfig } from "tsup"

// The workspace consumes @parley/core from source; this build is what a
// publish ships (see publishConfig in package.json): ESM + CJS + .d.ts.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20"
})
