/**
 * The request pipeline's security, as @effect/platform's HttpApiBuilder applies it (issue 24): every
 * security middleware of an endpoint must pass, and within one middleware any one of its schemes is
 * enough. The pipeline used to require all of a middleware's schemes.
 */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { combineSecurity } from "../src/http/ApiRouter.js"

const pass = Effect.void
const refuse = (why: string) => Effect.fail(why)
const run = (checks: ReadonlyArray<{ tag: string; check: Effect.Effect<void, string> }>) =>
  Effect.runSync(Effect.either(combineSecurity(checks)))

describe("combineSecurity", () => {
  it("passes when any one scheme of a middleware passes", () => {
    expect(Either.isRight(run([{ tag: "Auth", check: refuse("bearer") }, { tag: "Auth", check: pass }]))).toBe(true)
    expect(Either.isRight(run([{ tag: "Auth", check: pass }, { tag: "Auth", check: refuse("apiKey") }]))).toBe(true)
  })

  it("refuses with the last scheme's failure when none of a middleware's schemes passes", () => {
    expect(run([{ tag: "Auth", check: refuse("bearer") }, { tag: "Auth", check: refuse("apiKey") }])).toEqual(Either.left("apiKey"))
  })

  it("requires every middleware", () => {
    expect(run([{ tag: "Auth", check: pass }, { tag: "Seat", check: refuse("seat") }])).toEqual(Either.left("seat"))
    expect(Either.isRight(run([]))).toBe(true)
  })
})
