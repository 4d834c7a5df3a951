/**
 * The order the server suite's files start in. Vitest starts the files whose last run took longest first
 * (from its results cache), and on a fresh clone, where there is no cache, the largest files first. A few
 * short files wait long — kill rounds and the lease that follows them, a template cache or a lease left
 * to lapse, replicas draining a backlog — and by size they would start last, leaving one worker busy for
 * a minute after the others are done. Those files start first when the cache does not know them yet;
 * once it does, their measured times place them.
 */
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Files that wait much longer than their size says (paths from the package's root). */
const LONG_WAITS = [
  /^test\/crash-[\w-]+\.test\.ts$/,
  /^test\/replicas\.test\.ts$/,
  /^test\/provider-ssrf\.test\.ts$/,
  /^test\/destinations-dispatch\.test\.ts$/,
  /^test\/zoho-templates-stale\.test\.ts$/
]

export default class LongWaitsFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const root = this.ctx.config.root
    const path = (file: TestSpecification) => relative(root, file.moduleId).split("\\").join("/")
    const unmeasuredLongWait = (file: TestSpecification) =>
      this.ctx.cache.getFileTestResults(`${file.project.name}:${path(file)}`) === undefined &&
      LONG_WAITS.some((pattern) => pattern.test(path(file)))
    return [...sorted.filter(unmeasuredLongWait), ...sorted.filter((file) => !unmeasuredLongWait(file))]
  }
}
