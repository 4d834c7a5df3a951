import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One module graph per worker, not per file: the core's tests share no state but what each builds
    // (layers, test clocks), and importing Effect and the core afresh for each of 28 files cost three
    // quarters of the run's CPU (43 s against 12 s, 2026-11-28).
    isolate: false
  }
})
