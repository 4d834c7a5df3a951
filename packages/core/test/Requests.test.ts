// The two request bodies of /api/v1, decoded with effect/Schema exactly as the
// HttpApi decodes them: every constraint of the contract (E.164, the Limits
// table's max lengths, enums and defaults, timestamps with an offset, and the
// stateless cross-field rules) passes at its boundary and fails one past it,
// naming the offending field.
import { describe, expect, it } from "@effect/vitest"
import { Either, ParseResult, Schema } from "effect"
import { CreateAiCallRequest, CreateMessageRequest } from "../src/internal.js"

type Issue = { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }

/** Decodes `input`; answers the decoded value, or the issues with their paths. */
const decode = <A, I>(schema: Schema.Schema<A, I>, input: unknown): Either.Either<A, ReadonlyArray<Issue>> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all" })(input),
    (error) => ParseResult.ArrayFormatter.formatErrorSync(error)
  )

const decodeMessage = (input: Record<string, unknown>) => decode(CreateMessageRequest, input)
const decodeCall = (input: Record<string, unknown>) => decode(CreateAiCallRequest, input)

const expectOk = <A>(result: Either.Either<A, ReadonlyArray<Issue>>): A =>
  Either.match(result, {
    onLeft: (issues) => {
      throw new Error(`expected the body to decode, got ${JSON.stringify(issues)}`)
    },
    onRight: (value) => value
  })

/** Asserts a failure whose issues include one at `field` (its first path segment); answers those issues. */
const expectFieldError = <A>(result: Either.Either<A, ReadonlyArray<Issue>>, field: string): ReadonlyArray<Issue> => {
  expect(Either.isLeft(result)).toBe(true)
  const issues = Either.match(result, { onLeft: (i) => i, onRight: () => [] as ReadonlyArray<Issue> })
  const atField = issues.filter((i) => i.path[0] === field)
  expect(atField.map((i) => i.path[0]), JSON.stringify(issues)).toContain(field)
  return atField
}

const message = {
  to: "+14155550123",
  fromNumberSid: "PN00000000000000000000000000000001",
  body: "hello"
}

const call = {
  to: "+14155550123",
  fromNumberSid: "PN00000000000000000000000000000001",
  botId: "bot_sales",
  mode: "follow_script"
}

const chars = (n: number) => "x".repeat(n)

describe("CreateMessageRequest", () => {
  it("decodes a minimal body and defaults channel to SMS", () => {
    const decoded = expectOk(decodeMessage(message))
    expect(decoded.channel).toBe("SMS")
    expect(decoded.body).toBe("hello")
  })

  it("keeps an explicit channel WhatsApp", () => {
    expect(expectOk(decodeMessage({ ...message, channel: "WhatsApp" })).channel).toBe("WhatsApp")
  })

  it("refuses a channel outside SMS/WhatsApp", () => {
    expectFieldError(decodeMessage({ ...message, channel: "MMS" }), "channel")
    expectFieldError(decodeMessage({ ...message, channel: "sms" }), "channel")
  })

  describe("to: E.164 ^\\+[1-9]\\d{7,14}$", () => {
    it.each(["+14155550123", "+12345678", "+123456789012345", "+447700900001"])("accepts %s", (to) => {
      expectOk(decodeMessage({ ...message, to }))
    })
    it.each([
      ["no plus", "14155550123"],
      ["leading zero", "+04155550123"],
      ["too short (7 digits)", "+1234567"],
      ["too long (16 digits)", "+1234567890123456"],
      ["spaces", "+1 415 555 0123"],
      ["letters", "+1415555012a"],
      ["empty", ""]
    ])("refuses %s", (_name, to) => {
      const issues = expectFieldError(decodeMessage({ ...message, to }), "to")
      expect(issues.map((i) => i.message).join(" ")).toMatch(/E\.164/)
    })
    it("refuses a missing to", () => {
      const { to: _to, ...withoutTo } = message
      expectFieldError(decodeMessage(withoutTo), "to")
    })
  })

  describe("max lengths of the Limits table", () => {
    it("fromNumberSid: 64 passes, 65 fails naming fromNumberSid", () => {
      expectOk(decodeMessage({ ...message, fromNumberSid: chars(64) }))
      expectFieldError(decodeMessage({ ...message, fromNumberSid: chars(65) }), "fromNumberSid")
    })
    it("body: 5000 passes, 5001 fails naming body", () => {
      expect(expectOk(decodeMessage({ ...message, body: chars(5000) })).body).toHaveLength(5000)
      expectFieldError(decodeMessage({ ...message, body: chars(5001) }), "body")
    })
    it("templateUuid: 128 passes, 129 fails naming templateUuid", () => {
      const { body: _body, ...noBody } = message
      expectOk(decodeMessage({ ...noBody, templateUuid: chars(128) }))
      expectFieldError(decodeMessage({ ...noBody, templateUuid: chars(129) }), "templateUuid")
    })
    it("whatsAppContentSid: 64 passes, 65 fails naming whatsAppContentSid", () => {
      const whatsApp = { ...message, channel: "WhatsApp" }
      expectOk(decodeMessage({ ...whatsApp, whatsAppContentSid: chars(64) }))
      expectFieldError(decodeMessage({ ...whatsApp, whatsAppContentSid: chars(65) }), "whatsAppContentSid")
    })
  })

  describe("record", () => {
    it.each(["Leads", "Contacts", "Vendors", "Deals"])("accepts module %s", (module) => {
      expect(expectOk(decodeMessage({ ...message, record: { module, id: "5001" } })).record?.module).toBe(module)
    })
    it.each(["Accounts", "leads", ""])("refuses module %j", (module) => {
      const issues = expectFieldError(decodeMessage({ ...message, record: { module, id: "5001" } }), "record")
      expect(issues.some((i) => i.path[1] === "module")).toBe(true)
    })
    it("requires module and id when record is given", () => {
      const noModule = expectFieldError(decodeMessage({ ...message, record: { id: "5001" } }), "record")
      expect(noModule.some((i) => i.path[1] === "module")).toBe(true)
      const noId = expectFieldError(decodeMessage({ ...message, record: { module: "Leads" } }), "record")
      expect(noId.some((i) => i.path[1] === "id")).toBe(true)
    })
  })

  describe("scheduledFor: ISO 8601 with an offset", () => {
    it.each(["2026-01-01T10:00:00Z", "2026-01-01T10:00:00+02:00", "2026-01-01T10:00:00.123-05:30"])(
      "accepts %s",
      (scheduledFor) => {
        expect(expectOk(decodeMessage({ ...message, scheduledFor })).scheduledFor).toBe(scheduledFor)
      }
    )
    it.each(["2028-02-29T10:00:00Z", "2030-01-01T10:00:00+14:00", "2030-01-01T10:00:00-12:00", "2030-12-31T23:59:59Z"])(
      "accepts the real calendar instant %s",
      (scheduledFor) => {
        expect(expectOk(decodeMessage({ ...message, scheduledFor })).scheduledFor).toBe(scheduledFor)
      }
    )
    it.each([
      "2026-01-01T10:00:00",
      "2026-01-01",
      "10:00:00Z",
      "tomorrow",
      "2026-13-45T10:00:00Z",
      // impossible calendar dates, which Date.parse rolls over into the next month
      "2030-02-30T10:00:00Z",
      "2030-02-29T10:00:00Z",
      "2030-04-31T10:00:00+01:00",
      "2030-01-01T24:00:00Z",
      "2030-01-01T10:60:00Z",
      // offsets beyond the real ±14:00
      "2030-01-01T10:00:00+14:30",
      "2030-01-01T10:00:00-23:59",
      "9999-12-31T23:59:59-14:01",
      "2030-01-01T10:00:00+05:75"
    ])(
      "refuses %s",
      (scheduledFor) => {
        const issues = expectFieldError(decodeMessage({ ...message, scheduledFor }), "scheduledFor")
        expect(issues.map((i) => i.message).join(" ")).toMatch(/offset/)
      }
    )
  })

  describe("exactly one of body and templateUuid", () => {
    it("refuses neither", () => {
      const { body: _body, ...neither } = message
      const issues = expectFieldError(decodeMessage(neither), "body")
      expect(issues.map((i) => i.message).join(" ")).toMatch(/exactly one of body and templateUuid/)
    })
    it("refuses both", () => {
      const issues = expectFieldError(decodeMessage({ ...message, templateUuid: "t-1" }), "body")
      expect(issues.map((i) => i.message).join(" ")).toMatch(/exactly one of body and templateUuid/)
    })
    it("accepts templateUuid alone", () => {
      const { body: _body, ...noBody } = message
      const decoded = expectOk(decodeMessage({ ...noBody, templateUuid: "t-1" }))
      expect(decoded.templateUuid).toBe("t-1")
      expect(decoded.body).toBeUndefined()
    })
  })

  describe("WhatsApp is never scheduled", () => {
    it("refuses WhatsApp with scheduledFor, naming scheduledFor", () => {
      const issues = expectFieldError(
        decodeMessage({ ...message, channel: "WhatsApp", scheduledFor: "2026-01-01T10:00:00Z" }),
        "scheduledFor"
      )
      expect(issues.map((i) => i.message).join(" ")).toMatch(/WhatsApp/)
    })
    it("accepts SMS with the same scheduledFor", () => {
      expectOk(decodeMessage({ ...message, channel: "SMS", scheduledFor: "2026-01-01T10:00:00Z" }))
    })
  })
})

describe("CreateMessageRequest: WhatsApp content fields", () => {
  it("refuses whatsAppContentSid with channel SMS, naming whatsAppContentSid", () => {
    expectFieldError(decodeMessage({ ...message, whatsAppContentSid: "HX0123456789abcdef0123456789abcdef" }), "whatsAppContentSid")
  })
  it("accepts variables keyed {{1}}, {{2}} and refuses other keys", () => {
    const whatsApp = { ...message, channel: "WhatsApp", whatsAppContentSid: "HX0123456789abcdef0123456789abcdef" }
    const decoded = expectOk(decodeMessage({ ...whatsApp, whatsAppContentVariables: { "{{1}}": "Ada", "{{2}}": "Tue" } }))
    expect(decoded.whatsAppContentVariables).toEqual({ "{{1}}": "Ada", "{{2}}": "Tue" })
    expectFieldError(decodeMessage({ ...whatsApp, whatsAppContentVariables: { name: "Ada" } }), "whatsAppContentVariables")
    expectFieldError(decodeMessage({ ...whatsApp, whatsAppContentVariables: { "{{0}}": "Ada" } }), "whatsAppContentVariables")
  })
  it("accepts a content template's named variables, {{first_name}}", () => {
    const whatsApp = { ...message, channel: "WhatsApp", whatsAppContentSid: "HX0123456789abcdef0123456789abcdef" }
    const decoded = expectOk(decodeMessage({ ...whatsApp, whatsAppContentVariables: { "{{first_name}}": "Ada" } }))
    expect(decoded.whatsAppContentVariables).toEqual({ "{{first_name}}": "Ada" })
    expectFieldError(decodeMessage({ ...whatsApp, whatsAppContentVariables: { "{{first name}}": "Ada" } }), "whatsAppContentVariables")
  })
})

describe("CreateAiCallRequest", () => {
  it("decodes a minimal body", () => {
    const decoded = expectOk(decodeCall(call))
    expect(decoded.botId).toBe("bot_sales")
    expect(decoded.mode).toBe("follow_script")
  })

  it.each(["follow_script", "deliver_specific_message"])("accepts mode %s", (mode) => {
    expect(expectOk(decodeCall({ ...call, mode, purposeMessage: "Confirm the appointment." })).mode).toBe(mode)
  })

  it.each(["script", "FOLLOW_SCRIPT", ""])("refuses mode %j", (mode) => {
    expectFieldError(decodeCall({ ...call, mode }), "mode")
  })

  it("requires mode and botId", () => {
    const { mode: _mode, ...noMode } = call
    expectFieldError(decodeCall(noMode), "mode")
    const { botId: _botId, ...noBot } = call
    expectFieldError(decodeCall(noBot), "botId")
  })

  it("refuses a non-E.164 to", () => {
    expectFieldError(decodeCall({ ...call, to: "4155550123" }), "to")
  })

  it("fromNumberSid: 64 passes, 65 fails naming fromNumberSid", () => {
    expectOk(decodeCall({ ...call, fromNumberSid: chars(64) }))
    expectFieldError(decodeCall({ ...call, fromNumberSid: chars(65) }), "fromNumberSid")
  })

  it("botId: 128 passes, 129 fails naming botId", () => {
    expectOk(decodeCall({ ...call, botId: chars(128) }))
    expectFieldError(decodeCall({ ...call, botId: chars(129) }), "botId")
  })

  it("purposeMessage: 4000 passes, 4001 fails naming purposeMessage", () => {
    expect(expectOk(decodeCall({ ...call, purposeMessage: chars(4000) })).purposeMessage).toHaveLength(4000)
    expectFieldError(decodeCall({ ...call, purposeMessage: chars(4001) }), "purposeMessage")
  })

  it("record.module is the same enum as for messages", () => {
    expectOk(decodeCall({ ...call, record: { module: "Deals", id: "8001" } }))
    expectFieldError(decodeCall({ ...call, record: { module: "Tasks", id: "8001" } }), "record")
  })

  it("scheduledFor must carry an offset", () => {
    expectOk(decodeCall({ ...call, scheduledFor: "2026-01-01T10:00:00Z" }))
    expectOk(decodeCall({ ...call, scheduledFor: "2026-01-01T10:00:00+02:00" }))
    expectFieldError(decodeCall({ ...call, scheduledFor: "2026-01-01T10:00:00" }), "scheduledFor")
  })
})
