/**
 * `parley providers set` with its credentials kept out of `ps` and shell history (issue 23, item 11):
 * from standard input, from an environment variable the operator names, and the old flags still working
 * with a warning. The real process runs: what it reads and prints is under test. Each way is checked
 * by what the server then does with the credential (a signed callback verifies with it).
 */
import twilioSdk from "twilio"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DemoSummary, TestServer } from "./support/server.js"

const ACCOUNT = `AC${"ab".repeat(16)}`

describe("providers set: where secrets come from", () => {
  let server: TestServer
  let demo: DemoSummary

  beforeAll(async () => {
    server = await TestServer.start({ env: { PARLEY_SIM_STEP_MS: "50" } })
    demo = await server.demo()
  }, 120_000)
  afterAll(() => server.dispose())

  const twilio = (...extra: ReadonlyArray<string>) =>
    ["providers", "set", "--org", demo.orgId, "--kind", "twilio", "--account-sid", ACCOUNT, ...extra]

  /** Whether a status callback signed with `token` is verified now (it is not 401). */
  const verifies = async (token: string) => {
    // The server reads verification keys at most once a second (CallbackGate.KEY_CACHE_MS).
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const url = `${server.baseUrl}/providers/twilio/status?org=${demo.orgId}&action=1`
    const fields = { MessageSid: "SM1", MessageStatus: "sent" }
    const answer = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": twilioSdk.getExpectedTwilioSignature(token, url, fields)
      },
      body: new URLSearchParams(fields)
    })
    return answer.status !== 401
  }

  it("reads the auth token from standard input, printing no warning", async () => {
    const result = await server.cli(twilio("--auth-token-stdin"), { input: "token-from-stdin\n" })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).not.toContain("warning")
    expect(result.stdout).not.toContain("token-from-stdin")
    expect(await verifies("token-from-stdin")).toBe(true)
  }, 60_000)

  it("reads the auth token from the environment variable the operator names", async () => {
    const result = await server.cli(twilio("--auth-token-env", "MY_TWILIO_TOKEN"), { env: { MY_TWILIO_TOKEN: "token-from-env" } })
    expect(result.code, result.stderr).toBe(0)
    expect(await verifies("token-from-env")).toBe(true)
    const missing = await server.cli(twilio("--auth-token-env", "NOT_SET_ANYWHERE"))
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain("NOT_SET_ANYWHERE")
  }, 60_000)

  it("still takes --auth-token on the command line, warning that it shows in ps and shell history", async () => {
    const result = await server.cli(twilio("--auth-token", "token-from-flag"))
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain("warning: --auth-token on the command line shows in ps and shell history")
    expect(await verifies("token-from-flag")).toBe(true)
  }, 60_000)

  it("reads Vapi's API key and webhook secret the same ways, one of them from standard input", async () => {
    const vapi = ["providers", "set", "--org", demo.orgId, "--kind", "vapi"]
    const result = await server.cli([...vapi, "--api-key-env", "VAPI_KEY", "--webhook-secret-stdin"], {
      input: "secret-from-stdin\n",
      env: { VAPI_KEY: "key-from-env" }
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).not.toContain("warning")
    const both = await server.cli([...vapi, "--api-key-stdin", "--webhook-secret-stdin"], { input: "x\n" })
    expect(both.code).not.toBe(0)
    expect(both.stderr).toContain("only one secret can be read from standard input")
  }, 60_000)

  it("refuses another provider's flag instead of dropping it", async () => {
    const result = await server.cli([
      "providers", "set", "--org", demo.orgId, "--kind", "vapi", "--api-key", "k", "--auth-token", "meant-for-twilio"
    ])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("--auth-token is not a setting of Vapi")
    expect(result.stderr).toContain("--api-key")
    expect(`${result.stdout}${result.stderr}`).not.toContain("meant-for-twilio")
  }, 60_000)
})
