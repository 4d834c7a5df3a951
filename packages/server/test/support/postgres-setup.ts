/**
 * Vitest global setup of the Postgres pass (PARLEY_TEST_STORE=postgres):
 * finds or starts the PostgreSQL the pass runs on, once per run, hands its
 * URL to the test files (`inject("parleyPostgresUrl")`, read in store.ts) and
 * stops a cluster it started. vitest.config.ts only installs it when the pass
 * is not skipped; reaching "none" here means CI=true, where a skip is a failure.
 */
import type { TestProject } from "vitest/node"
import { planPostgres, shown, startThrowawayPostgres, unavailableNotice } from "./postgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** An admin connection URL on the PostgreSQL of this run: test databases are created through it. */
    readonly parleyPostgresUrl: string
  }
}

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  const plan = await planPostgres()
  switch (plan.kind) {
    case "server":
      project.provide("parleyPostgresUrl", plan.url)
      return undefined
    case "throwaway": {
      const cluster = await startThrowawayPostgres(plan.binDir)
      console.log(`Postgres pass: ${plan.unanswered}; started a throw-away PostgreSQL from ${cluster.binDir} at ${shown(cluster.url)} (stopped after the run).`)
      project.provide("parleyPostgresUrl", cluster.url)
      return cluster.stop
    }
    case "none":
      throw new Error(unavailableNotice(plan.reason, "failed"))
  }
}
