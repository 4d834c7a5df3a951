import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Must run before anything imports n8n-core, which writes its config folder on import.
    setupFiles: ["test/support/setup.ts"],
    // Real Parley server processes and real workflow runs: give them room on 2 cores.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false
  }
})
