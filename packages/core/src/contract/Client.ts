/**
 * The typed client for other TypeScript services, derived from the contract.
 * Every endpoint is a method (`client.messages.createMessage(...)`), and every
 * error the server can answer decodes to its tagged class.
 */
import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { ParleyApi } from "./Api.js"

export interface ParleyClientOptions {
  /** Where the server is, without the /api/v1 prefix, e.g. `http://localhost:8787`. */
  readonly baseUrl: string
  readonly apiKey: string | Redacted.Redacted<string>
}

export const makeParleyClient = (options: ParleyClientOptions) =>
  HttpApiClient.make(ParleyApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(
      HttpClientRequest.bearerToken(
        Redacted.isRedacted(options.apiKey) ? Redacted.value(options.apiKey) : options.apiKey
      )
    )
  })

export type ParleyClient = Effect.Effect.Success<ReturnType<typeof makeParleyClient>>
