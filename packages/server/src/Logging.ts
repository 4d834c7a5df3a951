/**
 * Structured JSON logs, one object per line on stdout, at LOG_LEVEL. Log
 * lines carry ids, routes, statuses and timings — never a key, a token, a
 * message body or SQL.
 */
import { Effect, Layer, Logger } from "effect"
import { ServerConfig } from "./config/ServerConfig.js"

export const LoggingLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config) => Layer.merge(Logger.json, Logger.minimumLogLevel(config.logLevel)))
)
