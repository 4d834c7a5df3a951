/** `parley demo`: create (once) the demo organisation and mint fresh test and live keys. */
import { Command } from "@effect/cli"
import { Demo } from "@parley/core/internal"
import { Effect } from "effect"
import { json, print } from "../Output.js"

export const describeDemo = (demo: Demo.DemoSummary, baseUrl: string): string => {
  const sender = demo.numbers.find((n) => !n.whatsApp) ?? demo.numbers[0]
  return [
    `Demo organisation ${demo.orgId}`,
    // The live key first: it is the one the README's tour and the curl below use.
    `  Live key:  ${demo.keys.live}   (acts for real: actions are dispatched, statuses move, events are sent)`,
    `  Test key:  ${demo.keys.test}   (simulates: answers like the live key, sends nothing)`,
    `  numbers:   ${demo.numbers.map((n) => `${n.sid} (${n.phoneNumber}${n.whatsApp ? ", WhatsApp" : ""})`).join(", ")}`,
    `  bots:      ${demo.bots.filter((b) => b.active).map((b) => b.id).join(", ")}`,
    `  templates: ${demo.templates.map((t) => `${t.id} (${t.name})`).join(", ")}`,
    "",
    "Send a first message with the live key:",
    `  curl -sS -X POST ${baseUrl}/api/v1/messages \\`,
    `    -H "Authorization: Bearer ${demo.keys.live}" \\`,
    `    -H "Content-Type: application/json" -H "Idempotency-Key: $(date +%s%N)" \\`,
    `    -d '{"to":"+14155550123","fromNumberSid":"${sender?.sid ?? ""}","body":"Hello from Parley"}'`
  ].join("\n")
}

export const demo = Command.make("demo", { json }, ({ json }) =>
  Effect.gen(function*() {
    const summary = yield* Demo.seedDemo()
    const port = process.env.PORT ?? "8787"
    yield* print(json, summary, () => describeDemo(summary, `http://localhost:${port}`))
  })).pipe(Command.withDescription("Create the demo organisation (once) and print fresh test and live keys"))
