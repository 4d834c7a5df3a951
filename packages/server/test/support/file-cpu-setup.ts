/**
 * Vitest setup file (runs in the worker before each test file): records the file's CPU and that of the
 * processes it started (file-cpu.ts). Its afterAll is registered first, so under vitest's default
 * `stack` hook order it runs after the file's own, once the file has stopped its servers.
 */
import { relative } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { type CpuReading, readCpu, recordFileCpu } from "./file-cpu.js"

let before: CpuReading | undefined

beforeAll(() => {
  before = readCpu()
})

afterAll((suite) => {
  const after = readCpu()
  const path = suite.file.filepath
  if (before === undefined || after === undefined) return
  recordFileCpu(relative(process.cwd(), path), before, after)
})
