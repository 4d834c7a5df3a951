/**
 * The Promise client, for TypeScript services that do not use Effect.
 *
 * It is the contract's own client (`HttpApiClient` over `ParleyApi`) run on
 * Effect inside, walked group by group and endpoint by endpoint, so every
 * endpoint of the contract is a method here without being named here, with the
 * same schemas checking requests and decoding answers. On top of it:
 * - calls resolve with the decoded resource and reject with a class:
 *   the contract's error (`NotFound`, `RateLimited`, …), `InvalidRequest` for
 *   a request the schemas refuse before sending, or one of ClientErrors';
 * - 429 and safe 503 answers are retried after `Retry-After` (see Retry);
 * - an endpoint whose headers declare an Idempotency-Key gets one when the
 *   caller gives none, made once per call, so the client's own retries
 *   replay rather than repeat the creation.
 */
import {
  FetchHttpClient,
  type HttpApi,
  HttpApiClient,
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpClient,
  HttpClientError,
  HttpClientRequest
} from "@effect/platform"
import type { HttpClientResponse } from "@effect/platform"
import { Cause, Effect, Exit, FiberRef, Option, ParseResult, Schema, SchemaAST } from "effect"
import type { Simplify } from "effect/Types"
import { ParleyApi } from "../contract/Api.js"
import { ErrorCatalog, InvalidRequest } from "../contract/Errors.js"
import { IDEMPOTENCY_HEADER } from "../contract/Requests.js"
import { ParleyConnectionError, ParleyUnexpectedResponse } from "./ClientErrors.js"
import { type RetryPolicy, withRetries } from "./Retry.js"

export interface CreateParleyClientOptions {
  /** Where the server is, without the /api/v1 prefix, e.g. `http://localhost:8787`. */
  readonly baseUrl: string
  readonly apiKey: string
  /** When to retry 429 and 503 answers; `{ maxRetries: 0 }` turns retrying off. */
  readonly retry?: RetryPolicy
  /** Makes the Idempotency-Key of a call that brings none. Default: a random UUID. */
  readonly idempotencyKey?: () => string
  /** The fetch to send with. Default: the global fetch. */
  readonly fetch?: typeof globalThis.fetch
}

/** An object is optional when it has no required key (`{}` accepts it). */
type ArgumentOf<Request, Success> = {} extends Request ? (request?: Request) => Promise<Success>
  : (request: Request) => Promise<Success>

/** What the contract's schemas declare for one endpoint; a part whose fields are all optional may be left out. */
type PromiseRequest<Path, UrlParams, Payload, Headers> = Simplify<
  & ([Path] extends [void] ? unknown : { readonly path: Path })
  & ([UrlParams] extends [never] ? unknown
    : {} extends UrlParams ? { readonly urlParams?: UrlParams }
    : { readonly urlParams: UrlParams })
  & ([Headers] extends [never] ? unknown
    : {} extends Headers ? { readonly headers?: Headers }
    : { readonly headers: Headers })
  & ([Payload] extends [never] ? unknown : { readonly payload: Payload })
>

export type PromiseMethod<Endpoint> = [Endpoint] extends [
  HttpApiEndpoint.HttpApiEndpoint<
    infer _Name,
    infer _Method,
    infer Path,
    infer UrlParams,
    infer Payload,
    infer Headers,
    infer Success,
    infer _Error,
    infer _R,
    infer _RE
  >
] ? ArgumentOf<PromiseRequest<Path, UrlParams, Payload, Headers>, Success>
  : never

export type PromiseGroup<Group> = [Group] extends
  [HttpApiGroup.HttpApiGroup<infer _Id, infer Endpoints, infer _Error, infer _R, infer _TopLevel>]
  ? { readonly [Endpoint in Endpoints as HttpApiEndpoint.HttpApiEndpoint.Name<Endpoint>]: PromiseMethod<Endpoint> }
  : never

/** The Promise client of an HttpApi: one object per group, one method per endpoint (top-level groups' methods at the root), as HttpApiClient lays them out. */
export type PromiseClient<Api> = Api extends HttpApi.HttpApi<infer _Id, infer Groups, infer _Error, infer _R> ? Simplify<
    & {
      readonly [Group in Extract<Groups, { readonly topLevel: false }> as HttpApiGroup.HttpApiGroup.Name<Group>]:
        PromiseGroup<Group>
    }
    & UnionToIntersection<PromiseGroup<Extract<Groups, { readonly topLevel: true }>>>
  >
  : never

type UnionToIntersection<U> = (U extends unknown ? (k: U) => void : never) extends ((k: infer I) => void) ? I
  : never

/** Parley's Promise client: `client.messages.createMessage({ payload })`, `client.resources.listNumbers()`, … */
export type ParleyPromiseClient = PromiseClient<typeof ParleyApi>

type EffectMethod = (request: unknown) => Effect.Effect<unknown, unknown>
type PromiseFunction = (request?: unknown) => Promise<unknown>

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null

const property = (value: unknown, key: string): unknown => isRecord(value) ? value[key] : undefined

// The contract client's methods are typed per endpoint; walking them by name, they are
// functions of one request to an Effect (HttpApiClient's own implementation is exactly that).
const isEffectMethod = (value: unknown): value is EffectMethod => typeof value === "function"

/** What the walk reads of an endpoint's schemas. */
interface EndpointSchemas {
  readonly name: string
  readonly urlParamsSchema: Option.Option<{ readonly ast: SchemaAST.AST }>
  readonly headersSchema: Option.Option<{ readonly ast: SchemaAST.AST }>
}

const declares = (schema: Option.Option<{ readonly ast: SchemaAST.AST }>, field: string): boolean =>
  Option.exists(schema, (s) => SchemaAST.getPropertySignatures(s.ast).some((p) => p.name === field))

/** Every error body of the catalogue, whatever the endpoint declares (a 405 or a proxy's 503 still decode). */
const decodeCatalogError = Schema.decodeUnknownOption(Schema.Union(...Object.values(ErrorCatalog)))

const BODY_SAMPLE = 500

/**
 * The last answer of the call running in this fiber: tells a request the
 * schemas refused before sending (none yet) from an answer they cannot decode.
 */
const lastResponse = FiberRef.unsafeMake<Option.Option<HttpClientResponse.HttpClientResponse>>(Option.none())

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const unexpected = (response: HttpClientResponse.HttpClientResponse, why: string) =>
  // The contract client decoded from `arrayBuffer`, which the response keeps; its `text` is a second read that fails.
  response.arrayBuffer.pipe(
    Effect.map((bytes) => new TextDecoder().decode(bytes)),
    Effect.orElseSucceed(() => ""),
    Effect.map((text) => {
      const known = decodeCatalogError(parseJson(text))
      if (Option.isSome(known)) return known.value
      return new ParleyUnexpectedResponse({
        message: `${response.request.method} ${response.request.url} answered ${response.status}: ${why}`,
        status: response.status,
        body: text.slice(0, BODY_SAMPLE)
      })
    })
  )

/**
 * A request the schemas refused, worded as the server words it: `field: rule`
 * per field, without the offending value the schema library appends.
 */
const describeRefusal = (error: ParseResult.ParseError): string =>
  [
    ...new Set(ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => {
      const cut = issue.message.indexOf(", actual ")
      const rule = cut === -1 ? issue.message : issue.message.slice(0, cut)
      return issue.path.length === 0 ? rule : `${issue.path.map(String).join(".")}: ${rule}`
    }))
  ].join("; ")

/** What a failed call rejects with (see the module's header). */
const toClientError = (error: unknown): Effect.Effect<unknown> => {
  if (ParseResult.isParseError(error)) {
    return Effect.flatMap(FiberRef.get(lastResponse), (response) =>
      Option.match(response, {
        onNone: () => Effect.succeed(new InvalidRequest({ message: describeRefusal(error) })),
        onSome: (answer) => unexpected(answer, `the body does not match the contract: ${error.message}`)
      }))
  }
  if (!HttpClientError.isHttpClientError(error)) return Effect.succeed(error)
  if (error._tag === "RequestError") {
    return Effect.succeed(
      new ParleyConnectionError({ message: `${error.request.method} ${error.request.url}: ${error.message}`, cause: error.cause })
    )
  }
  return unexpected(error.response, "not an answer the contract describes for this endpoint")
}

/**
 * The request as the contract client takes it: parts the endpoint declares
 * but the caller left out are empty, and an Idempotency-Key is added when the
 * endpoint declares one and the caller gave none.
 */
const completeRequest = (
  endpoint: EndpointSchemas,
  request: unknown,
  newKey: () => string
): unknown => {
  const given = isRecord(request) ? request : {}
  const headers = isRecord(given.headers) ? given.headers : {}
  const keyed = declares(endpoint.headersSchema, IDEMPOTENCY_HEADER) && headers[IDEMPOTENCY_HEADER] === undefined
  return {
    ...given,
    ...(Option.isSome(endpoint.urlParamsSchema) && given.urlParams === undefined ? { urlParams: {} } : {}),
    ...(Option.isSome(endpoint.headersSchema) ? { headers: keyed ? { ...headers, [IDEMPOTENCY_HEADER]: newKey() } : headers } : {})
  }
}

/**
 * The object is built by walking the same contract its type is computed from;
 * TypeScript cannot follow a walk at run time into a mapped type, so this
 * public signature states the result (the consumer test calls every group).
 */
export function createParleyClient(options: CreateParleyClientOptions): ParleyPromiseClient
export function createParleyClient(options: CreateParleyClientOptions): object {
  const fetch = options.fetch ?? globalThis.fetch
  const newKey = options.idempotencyKey ?? (() => globalThis.crypto.randomUUID())
  const contractClient: unknown = HttpApiClient.make(ParleyApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest(HttpClientRequest.bearerToken(options.apiKey)),
        withRetries(options.retry),
        HttpClient.tap((response) => FiberRef.set(lastResponse, Option.some(response)))
      )
  }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runSync)

  const run = (effect: Effect.Effect<unknown, unknown>): Promise<unknown> =>
    Effect.runPromiseExit(
      effect.pipe(
        Effect.catchAll((error) => Effect.flatMap(toClientError(error), Effect.fail)),
        Effect.provideService(FetchHttpClient.Fetch, fetch)
      )
    ).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      throw Cause.squash(exit.cause)
    })

  const root: Record<string, unknown> = {}
  for (const group of Object.values(ParleyApi.groups)) {
    const methods: Record<string, PromiseFunction> = {}
    const contractGroup = group.topLevel ? contractClient : property(contractClient, group.identifier)
    for (const endpoint of Object.values<EndpointSchemas>(group.endpoints)) {
      const method = property(contractGroup, endpoint.name)
      if (!isEffectMethod(method)) throw new Error(`the contract client has no method ${group.identifier}.${endpoint.name}`)
      methods[endpoint.name] = (request) => run(method(completeRequest(endpoint, request, newKey)))
    }
    if (group.topLevel) Object.assign(root, methods)
    else root[group.identifier] = methods
  }
  return root
}
