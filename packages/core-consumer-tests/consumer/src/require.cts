// A CommonJS service: require() resolves the package's CJS build and its .d.cts types.
import parley = require("@parley/core")

const client = parley.createParleyClient({ baseUrl: process.env["PARLEY_URL"] ?? "", apiKey: process.env["PARLEY_API_KEY"] ?? "" })
client.resources.listNumbers().then(
  ({ items }) => console.log(JSON.stringify({ numbers: items.length, cjs: typeof module === "object" })),
  (error: unknown) => {
    console.error(error)
    process.exitCode = 1
  }
)
