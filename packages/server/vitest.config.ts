import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Black-box tests start real server processes; give them room on 2 cores.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false
  }
})
