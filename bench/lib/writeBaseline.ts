/**
 * The config every write baseline (bench/baselines/write*.ts) takes: the demo organisation's key, lines and
 * owner, and the simulated carrier's step (the benchmarked Parley servers' PARLEY_SIM_STEP_MS).
 */
import { BENCH_SIM_STEP_MS } from "./processes.js"
import type { OrgContext } from "./seed.js"

export const writeBaselineConfig = (key: string, org: OrgContext, dbFile: string) => ({
  key,
  keyId: org.keyId,
  orgId: org.orgId,
  dbFile,
  lines: Object.fromEntries(org.lines.map((l) => [l.sid, l.phoneNumber])),
  ownerId: org.ownerId,
  ownerName: org.ownerName,
  simStepMs: BENCH_SIM_STEP_MS
})
