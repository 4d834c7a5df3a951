/**
 * What every baseline server does around its handler: keep-alive as Parley's
 * server, listen on a free port of 127.0.0.1, print `{"port":N}` for the
 * orchestrator (lib/processes.ts), and stop on SIGTERM.
 */
import type { Server } from "node:http"

export const listen = (server: Server, onStop: () => void = () => {}): void => {
  server.keepAliveTimeout = 5_000
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address !== null ? address.port : 0 })}\n`)
  })
  process.on("SIGTERM", () => {
    server.closeAllConnections()
    server.close(() => {
      onStop()
      process.exit(0)
    })
  })
}
