/**
 * The response encoder's fast walk (ResponseEncoder) against the schema's own
 * encoder, for every success schema of the contract: on values generated from
 * each schema (Effect's Arbitrary) and on values with something wrong, the
 * JSON is the same byte for byte, and where the schema refuses a value the
 * encoder refuses it too. And the schemas of the routes read most are encoded
 * by the walk at all (else the decision silently lapses).
 */
import { HttpApi, type HttpApiEndpoint, HttpApiSchema } from "@effect/platform"
import { ParleyApi } from "@parley/core"
import { Arbitrary, Either, FastCheck, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { isFast, responseEncoder } from "../src/http/ResponseEncoder.js"

const successes: Array<{ readonly name: string; readonly schema: Schema.Schema<unknown, unknown, never> }> = []
HttpApi.reflect(ParleyApi, {
  onGroup: () => undefined,
  onEndpoint: ({ endpoint, group }) => {
    const schema = (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).successSchema as Schema.Schema<unknown, unknown, never>
    if (!HttpApiSchema.isVoid(schema.ast)) successes.push({ name: `${group.identifier}.${endpoint.name}`, schema })
  }
})

const json = (result: Either.Either<unknown, unknown>) => (Either.isRight(result) ? JSON.stringify(result.right) : "refused")

describe("response encoder", () => {
  it("encodes the most read routes' answers by the fast walk", () => {
    const fast = successes.filter((s) => isFast(s.schema)).map((s) => s.name)
    for (const name of ["resources.listNumbers", "messages.getMessage", "messages.listMessages", "conversations.listConversations"]) {
      expect(fast, name).toContain(name)
    }
  })

  for (const { name, schema } of successes) {
    it(`${name}: the same JSON as the schema's encoder, for generated and for wrong values`, () => {
      const encode = responseEncoder(schema)
      const reference = Schema.encodeUnknownEither(schema)
      FastCheck.assert(
        FastCheck.property(Arbitrary.make(schema), (value) => {
          expect(json(encode(value))).toBe(json(reference(value)))
        }),
        { numRuns: 200, seed: 20261123 }
      )
      // Wrong values: a field of the wrong type, a missing one, an extra one, something else altogether.
      FastCheck.assert(
        FastCheck.property(Arbitrary.make(schema), FastCheck.string(), FastCheck.anything(), (value, key, junk) => {
          const spoiled = typeof value === "object" && value !== null ? { ...value, [key]: junk } : junk
          expect(json(encode(spoiled))).toBe(json(reference(spoiled)))
          expect(json(encode(junk))).toBe(json(reference(junk)))
        }),
        { numRuns: 200, seed: 20261123 }
      )
    })
  }
})
