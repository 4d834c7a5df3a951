/**
 * `@parley/core/testing` — the engine without a database: every port in
 * memory (`MemoryPortsLayer`), and the demo organisation (numbers, bots,
 * templates, CRM records and a fresh test and live key) seeded into them.
 * For tests of a host, and for embedding the core in a process that keeps
 * nothing.
 */
export { MemoryPortsLayer } from "./layers.js"
export { DEMO_ORG_ID, type DemoSummary, seedDemo } from "./admin/Demo.js"
// The simulator, which embedding with the memory ports usually wants (also in `@parley/core/domain`).
export { Simulator, SimulatorMemory } from "./domain.js"
