import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Packing (a tsup build), two installs and four type-checks on 2 shared cores: minutes, not seconds.
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false
  }
})
