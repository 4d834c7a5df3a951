import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Must run before anything imports n8n-core, which writes its config folder on import.
    setupFiles: ["test/support/setup.ts"],
    // Real Parley server processes and real workflow runs: give them room on 2 cores.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    // One module graph for every file, not one each: importing n8n-core and its workflow engine afresh for
    // each of 9 files was most of the run's CPU (49 s against 27 s, 2026-11-28). The setup file still runs
    // before the first import of n8n-core, and no file changes state another could see.
    isolate: false
  }
})
