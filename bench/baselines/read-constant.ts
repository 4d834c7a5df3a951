/**
 * HTTP-alone reference: a raw `node:http` server that checks the same Bearer key
 * as Parley and answers byte-identical bodies, fetched from the real server
 * beforehand (GET /api/v1/numbers and GET /api/v1/messages/{id}), without
 * reading anything: what HTTP alone costs on this machine. `pnpm bench` prints
 * it beside the read baseline that does the same work as Parley (read.ts).
 *
 * Config (JSON in argv[2]): { key, routes: { "<path>": "<body>" } }.
 */
import { createServer } from "node:http"
import { listen } from "./listen.js"

interface Config {
  readonly key: string
  readonly routes: Readonly<Record<string, string>>
}

const config = JSON.parse(process.argv[2] ?? "{}") as Config
const expected = `Bearer ${config.key}`
const routes = new Map(Object.entries(config.routes).map(([path, body]) => [path, Buffer.from(body)]))
const unauthorized = Buffer.from(JSON.stringify({ error: { code: "UNAUTHORIZED", message: "Missing or invalid API key." } }))
const notFound = Buffer.from(JSON.stringify({ error: { code: "NOT_FOUND", message: "No such route." } }))

const send = (res: import("node:http").ServerResponse, status: number, body: Buffer) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": body.length })
  res.end(body)
}

const server = createServer((req, res) => {
  if (req.url === "/healthz") return send(res, 200, Buffer.from("{\"status\":\"ok\"}"))
  if (req.headers.authorization !== expected) return send(res, 401, unauthorized)
  const body = req.method === "GET" ? routes.get(req.url ?? "") : undefined
  if (body === undefined) return send(res, 404, notFound)
  send(res, 200, body)
})
listen(server)
