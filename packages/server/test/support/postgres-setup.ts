/**
 * Vitest global setup of the Postgres pass (PARLEY_TEST_STORE=postgres):
 * finds or starts the PostgreSQL the pass runs on, once per run, hands its
 * URL to the test files (`inject("parleyPostgresUrl")`, read in store.ts) and
 * stops a cluster it started; and migrates the run's template database, which
 * the test databases are copied from (`inject("parleyPostgresTemplate")`;
 * postgres-template.ts). vitest.config.ts only installs it when the pass
 * is not skipped; reaching "none" here means CI=true, where a skip is a failure.
 */
import type { TestProject } from "vitest/node"
import { planPostgres, shown, startThrowawayPostgres, unavailableNotice } from "./postgres.js"
import { createTemplate, dropTemplate } from "./postgres-template.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** An admin connection URL on the PostgreSQL of this run: test databases are created through it. */
    readonly parleyPostgresUrl: string
    /** The migrated database each test database is created from (`CREATE DATABASE … TEMPLATE`). */
    readonly parleyPostgresTemplate: string
  }
}

/** Provides the URL and a template migrated on it; answers the teardown. */
const provide = async (project: TestProject, url: string, stop: () => Promise<void> | void): Promise<() => Promise<void>> => {
  project.provide("parleyPostgresUrl", url)
  let template: string
  try {
    template = await createTemplate(url)
  } catch (error) {
    await stop()
    throw error
  }
  project.provide("parleyPostgresTemplate", template)
  return async () => {
    await dropTemplate(url, template).catch(() => undefined)
    await stop()
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const plan = await planPostgres()
  switch (plan.kind) {
    case "server":
      return provide(project, plan.url, () => undefined)
    case "throwaway": {
      const cluster = await startThrowawayPostgres(plan.binDir)
      console.log(`Postgres pass: ${plan.unanswered}; started a throw-away PostgreSQL from ${cluster.binDir} at ${shown(cluster.url)} (stopped after the run).`)
      return provide(project, cluster.url, cluster.stop)
    }
    case "none":
      throw new Error(unavailableNotice(plan.reason, "failed"))
  }
}
