/**
 * Every request body `parley crm setup` sends to Zoho's metadata API is checked against Zoho's own API
 * definition (issue 31, item 10). The schemas below are derived, by hand and faithfully, from zoho/crm-oas
 * at commit 45dff2cc9c69403c85b8a3642e7056528dc668d5 (2025-06-27), folder v8.0:
 * - `POST /crm/v8/settings/fields`: fields.json `#/components/requestBodies/body` → `schemas/wrapper`
 *   (`fields`, required) → `schemas/fields`; the properties Parley can send keep their OAS types:
 *   `api_name`, `field_label`, `data_type` strings, `length` int32, `unique` (in `fields` an untyped
 *   nullable object; the file's own `schemas/unique` types its `casesensitive` as a nullable string, and
 *   that typing is what is checked here), `pick_list_values` → `schemas/pick_list_values`
 *   (`display_value`, `actual_value` strings), `textarea` → `schemas/textarea` (`type`: string),
 *   `lookup` (an object: `fields.properties.lookup` is `{type: object, nullable}`).
 * - `POST /crm/v8/settings/modules`: modules.json `requestBodies/body` → `schemas/Body_Wrapper`
 *   (`modules`) → `schemas/modules`: `api_name`, `plural_label`, `singular_label` strings (nullable),
 *   `profiles` an array of profiles.json `Minified_Profile` (`id`: string).
 * - `PUT /crm/v8/settings/profiles/{id}`: profiles.json `Update Profile` → `schemas/Body_Wrapper`
 *   (`profiles`, required) → `schemas/Profile`, whose `permissions_details` is an array of
 *   `schemas/Permission_Detail`: `id` string, `enabled` boolean (and `name`, `display_label`, `module`
 *   strings, `customizable` boolean, `parent_permissions` strings, which Parley does not send).
 * The OAS `required` lists of `fields`, `modules` and `Profile` are those of Zoho's answers (every property, ids and
 * times included), so requiredness is not checked; a property the derived schema does not name is refused,
 * which is stricter than the file.
 */
import { Either, ParseResult, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ZohoFake } from "./support/fakes/ZohoFake.js"
import { TestServer } from "./support/server.js"

const HEAVY = 180_000

const strict = { onExcessProperty: "error" } as const
const Int32 = Schema.Int.pipe(Schema.between(-2_147_483_648, 2_147_483_647))

const OasField = Schema.Struct({
  api_name: Schema.optional(Schema.String),
  field_label: Schema.optional(Schema.String),
  data_type: Schema.optional(Schema.String),
  length: Schema.optional(Int32),
  unique: Schema.optional(Schema.NullOr(Schema.Struct({ casesensitive: Schema.optional(Schema.NullOr(Schema.String)) }))),
  pick_list_values: Schema.optional(Schema.Array(Schema.Struct({
    display_value: Schema.optional(Schema.String),
    actual_value: Schema.optional(Schema.String)
  }))),
  textarea: Schema.optional(Schema.Struct({ type: Schema.optional(Schema.String) })),
  lookup: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
})
const OasFieldsBody = Schema.Struct({ fields: Schema.Array(OasField) })

const OasModulesBody = Schema.Struct({
  modules: Schema.optional(Schema.Array(Schema.Struct({
    api_name: Schema.optional(Schema.NullOr(Schema.String)),
    plural_label: Schema.optional(Schema.NullOr(Schema.String)),
    singular_label: Schema.optional(Schema.NullOr(Schema.String)),
    profiles: Schema.optional(Schema.Array(Schema.Struct({ id: Schema.optional(Schema.String), name: Schema.optional(Schema.String) })))
  })))
})

const OasProfilesBody = Schema.Struct({
  profiles: Schema.Array(Schema.Struct({
    id: Schema.optional(Schema.NullOr(Schema.String)),
    name: Schema.optional(Schema.NullOr(Schema.String)),
    permissions_details: Schema.optional(Schema.Array(Schema.Struct({
      id: Schema.optional(Schema.String),
      enabled: Schema.optional(Schema.Boolean),
      name: Schema.optional(Schema.String),
      display_label: Schema.optional(Schema.String),
      customizable: Schema.optional(Schema.Boolean),
      parent_permissions: Schema.optional(Schema.Array(Schema.String)),
      module: Schema.optional(Schema.String)
    })))
  }))
})

/** "valid", or why not in the schema's words. */
const check = <A, I>(schema: Schema.Schema<A, I>, body: string): string =>
  Either.match(Schema.decodeUnknownEither(schema)(JSON.parse(body), strict), {
    onLeft: (error) => ParseResult.TreeFormatter.formatErrorSync(error),
    onRight: () => "valid"
  })

describe("crm setup's request bodies against zoho/crm-oas v8", () => {
  let zoho: ZohoFake
  let server: TestServer

  beforeAll(async () => {
    zoho = await ZohoFake.start()
    server = await TestServer.start({
      env: { PARLEY_ZOHO_CLIENT_ID: zoho.clientId, PARLEY_ZOHO_CLIENT_SECRET: zoho.clientSecret, PARLEY_ZOHO_ACCOUNTS_URL: zoho.url }
    })
  }, HEAVY)

  afterAll(async () => {
    await server?.dispose()
    await zoho?.stop()
  })

  it("every module and field body of a first set-up matches the OpenAPI definition (unique.casesensitive a string)", async () => {
    const demo = await server.demo()
    const started = await server.admin(["crm", "connect", demo.orgId, "--provider", "zoho", "--json"])
    const consent = await fetch((JSON.parse(started.stdout) as { url: string }).url, { redirect: "manual" })
    expect((await fetch(consent.headers.get("location") ?? "")).status).toBe(200)
    const setup = await server.admin(["crm", "setup", demo.orgId, "--json"])
    expect(setup.code, setup.stderr).toBe(0)

    // The module and field creations, and the profile grants that follow them (a first set-up creates its
    // modules with their profiles, so it changes no existing module: PUT /settings/modules/{api} is not sent).
    const writes = zoho.requests.filter((r) => r.method !== "GET" && r.path.startsWith("/crm/v8/settings/"))
    expect(writes.map((r) => r.path)).toEqual(expect.arrayContaining(["/crm/v8/settings/modules", "/crm/v8/settings/fields"]))
    expect(writes.some((r) => r.method === "PUT" && r.path.startsWith("/crm/v8/settings/profiles/"))).toBe(true)
    const checkerOf = (method: string, path: string): ((body: string) => string) | undefined =>
      method === "POST" && path === "/crm/v8/settings/modules"
        ? (body) => check(OasModulesBody, body)
        : method === "POST" && path === "/crm/v8/settings/fields"
        ? (body) => check(OasFieldsBody, body)
        : method === "PUT" && /^\/crm\/v8\/settings\/profiles\/\d+$/.test(path)
        ? (body) => check(OasProfilesBody, body)
        : undefined
    for (const write of writes) {
      const checker = checkerOf(write.method, write.path)
      expect(checker, `${write.method} ${write.path}: a request crm setup makes that this test has no OAS schema for`).toBeDefined()
      if (checker !== undefined) expect(checker(write.body), `${write.method} ${write.path}`).toBe("valid")
    }
    // The unique key field went out, and with the OAS's type.
    const unique = writes.flatMap((w) => (JSON.parse(w.body) as { fields?: Array<{ unique?: unknown }> }).fields ?? []).filter((f) => f.unique !== undefined)
    expect(unique).toEqual([expect.objectContaining({ api_name: "Parley_Key", unique: { casesensitive: "true" } })])
  }, HEAVY)
})
