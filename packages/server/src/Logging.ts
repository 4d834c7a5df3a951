/**
 * Structured JSON logs, one object per line on stdout, at LOG_LEVEL. Log
 * lines carry ids, routes, statuses and timings — never a key, a token, a
 * message body or SQL; phone numbers are masked to their last 4 digits
 * (observability/Redaction, applied to every line here). A line written
 * while a request is served carries its `requestId`; a line about an action
 * carries its `actionId` (or `actionIds` for a batch) where it is written.
 */
import { CurrentRequestId } from "@parley/core/internal"
import { Effect, FiberRefs, HashMap, Layer, Logger } from "effect"
import { ServerConfig } from "./config/ServerConfig.js"
import { redactValue } from "./observability/Redaction.js"

export const redactingJsonLogger = Logger.mapInputOptions(Logger.jsonLogger, (options) => {
  const requestId = FiberRefs.getOrDefault(options.context, CurrentRequestId)
  const annotations = HashMap.map(options.annotations, (value) => redactValue(value))
  return {
    ...options,
    message: redactValue(options.message),
    annotations: requestId === "" || HashMap.has(annotations, "requestId")
      ? annotations
      : HashMap.set(annotations, "requestId", requestId)
  }
})

export const LoggingLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, (config) =>
    Layer.merge(
      Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(redactingJsonLogger)),
      Logger.minimumLogLevel(config.logLevel)
    ))
)
