/**
 * The contract's endpoints, compiled once at start from `ParleyApi`: how each
 * is matched (method and path), decoded (path, payload, headers, query — the
 * contract's schemas, decoders built once), authorized (the security
 * middleware the contract names, e.g. Bearer → `Authorization.bearer`) and
 * encoded (success schema and status). Nothing here names an endpoint: a new
 * endpoint is a contract entry and a handler (ApiHandlers).
 *
 * Why not `HttpApiBuilder`: it runs every request through a router, a
 * middleware stack and per-request schema compilation inside a fiber per
 * step, several times the CPU of the work itself (docs/benchmarks.md). This
 * does the same steps, in the same order, from the same definitions.
 */
import {
  type HttpApi,
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApi as HttpApiModule
} from "@effect/platform"
import { type ApiError, InvalidRequest, isApiError } from "@parley/core/internal"
import { Cause, Context, Effect, Either, Option, ParseResult, Redacted, Schema } from "effect"
import type * as AST from "effect/SchemaAST"
import { describeIssues } from "./DecodeErrors.js"
import { type GroupHandlers, groupHandlersTag } from "./ApiHandlers.js"
import type { RequestState } from "./RequestState.js"
import { responseEncoder } from "./ResponseEncoder.js"

type Decoder = (input: unknown) => Either.Either<unknown, ParseResult.ParseError>

/** A security middleware of the contract and the credential it reads from the request. */
interface Security {
  readonly tag: HttpApiMiddleware.TagClassSecurityAny
  readonly scheme: string
  readonly read: (headers: Readonly<Record<string, string | Array<string> | undefined>>) => unknown
}

export interface ContractRoute {
  /** `group.endpoint`, as scopes and logs name it. */
  readonly name: string
  readonly method: string
  /** The contract's path template (`/api/v1/conversations/:id`): what logs name, never the values in it. */
  readonly path: string
  /** Literal segments, and `null` where a path parameter goes (its name at the same index in `params`). */
  readonly segments: ReadonlyArray<string | null>
  readonly params: ReadonlyArray<string | null>
  readonly takesBody: boolean
  /** Answers the request; `state` is the request's (RequestState), which security fills with what it provides. */
  readonly run: (input: ContractInput, state: RequestState) => Effect.Effect<ContractAnswer>
}

export interface ContractInput {
  readonly params: Record<string, string>
  readonly query: string
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  /**
   * Reads and parses the body (null when empty; undefined for routes without one). Run only once the
   * request is authorized: a request without a valid key learns nothing about its body (not even that it
   * is malformed JSON), and a client that sent `Expect: 100-continue` is not invited to send it.
   */
  readonly payload: Effect.Effect<unknown, ApiError>
}

export type ContractAnswer =
  | { readonly _tag: "Success"; readonly status: number; readonly body: string | undefined }
  | { readonly _tag: "Failure"; readonly error: ApiError }
  | { readonly _tag: "Defect"; readonly cause: unknown }

const decoderOf = (schema: Schema.Schema.Any): Decoder =>
  Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)

/** The query string as the platform hands it to the contract: a repeated name becomes an array. */
const searchParams = (query: string): Record<string, string | Array<string>> => {
  const out: Record<string, string | Array<string>> = {}
  if (query === "") return out
  for (const [name, value] of new URLSearchParams(query)) {
    const previous = out[name]
    out[name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]
  }
  return out
}

/** The type a property or schema has once refinements, transformations and optionality are looked through. */
const underlying = (ast: AST.AST): AST.AST => {
  switch (ast._tag) {
    case "Refinement":
    case "Transformation":
      return underlying(ast.from)
    case "Suspend":
      return underlying(ast.f())
    case "Union": {
      const defined = ast.types.filter((type: AST.AST) => type._tag !== "UndefinedKeyword")
      return defined.length === 1 && defined[0] !== undefined ? underlying(defined[0]) : ast
    }
    default:
      return ast
  }
}

/** The query parameters a schema takes as arrays: a single `?status=Sent` is then handed on as `["Sent"]`. */
const arrayKeys = (ast: AST.AST): Set<string> => {
  const struct = underlying(ast)
  const keys = new Set<string>()
  if (struct._tag !== "TypeLiteral") return keys
  for (const property of struct.propertySignatures) {
    if (underlying(property.type)._tag === "TupleType") keys.add(String(property.name))
  }
  return keys
}

const asArrays = (
  params: Record<string, string | Array<string>>,
  arrays: ReadonlySet<string>
): Record<string, string | Array<string>> => {
  if (arrays.size === 0) return params
  const out: Record<string, string | Array<string>> = {}
  for (const [key, value] of Object.entries(params)) out[key] = arrays.has(key) && !Array.isArray(value) ? [value] : value
  return out
}

/**
 * The checks of an endpoint's security, as `HttpApiBuilder` applies them: every security middleware
 * must pass, and within one middleware any one of its schemes is enough (the first that passes; when
 * none does, the last one's failure).
 */
export const combineSecurity = <E>(
  checks: ReadonlyArray<{ readonly tag: unknown; readonly check: Effect.Effect<void, E> }>
): Effect.Effect<void, E> => {
  const byTag = new Map<unknown, Array<Effect.Effect<void, E>>>()
  for (const { check, tag } of checks) byTag.set(tag, [...(byTag.get(tag) ?? []), check])
  // Every contract endpoint has one middleware with one scheme: that check alone, with no loop around it.
  const middlewares = [...byTag.values()].map((schemes) => schemes.length === 1 && schemes[0] !== undefined ? schemes[0] : Effect.firstSuccessOf(schemes))
  if (middlewares.length === 1 && middlewares[0] !== undefined) return middlewares[0]
  return Effect.forEach(middlewares, (middleware) => middleware, { discard: true })
}

/**
 * Header values as their sender wrote them. Node hands header bytes over as latin1, one character per byte,
 * so a UTF-8 `Idempotency-Key` of 40 emoji (160 bytes) would read as 160 characters; limits count characters
 * (code points), as every body field does. Bytes that are not UTF-8 stay as Node read them.
 */
const asUtf8 = (value: string): string => {
  // Pure ASCII (the usual case) reads the same either way.
  if (!/[\u0080-\u00ff]/.test(value)) return value
  const bytes = Buffer.from(value, "latin1")
  const text = bytes.toString("utf8")
  return Buffer.from(text, "utf8").equals(bytes) ? text : value
}

const headersAsUtf8 = (
  headers: Readonly<Record<string, string | Array<string> | undefined>>
): Record<string, string | Array<string> | undefined> => {
  const out: Record<string, string | Array<string> | undefined> = {}
  for (const [name, value] of Object.entries(headers)) {
    out[name] = typeof value === "string" ? asUtf8(value) : Array.isArray(value) ? value.map(asUtf8) : value
  }
  return out
}

const BEARER_PREFIX_LENGTH = "Bearer ".length

const securityOf = (tag: HttpApiMiddleware.TagClassSecurityAny): Array<Security> =>
  Object.entries(tag.security).map(([scheme, definition]) => {
    if (definition._tag !== "Bearer") {
      throw new Error(`the request pipeline reads Bearer credentials only; ${tag.key}.${scheme} is ${definition._tag}`)
    }
    return {
      tag,
      scheme,
      // As HttpApiBuilder reads it: whatever follows the scheme's seven characters; the key check judges it.
      read: (headers) => {
        const value = headers["authorization"]
        return Redacted.make(typeof value === "string" ? value.slice(BEARER_PREFIX_LENGTH) : "")
      }
    }
  })

const invalid = (error: ParseResult.ParseError): ApiError =>
  new InvalidRequest({ message: describeIssues(ParseResult.ArrayFormatter.formatErrorSync(error)) })

const compile = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps,
  middleware: ReadonlySet<HttpApiMiddleware.TagClassAny>,
  context: Context.Context<never>
): ContractRoute => {
  const name = `${group.identifier}.${endpoint.name}`
  const handlers = Context.unsafeGet(context, groupHandlersTag(group.identifier)) as GroupHandlers
  const item = handlers.items.find((candidate) => candidate.endpoint.name === endpoint.name)
  if (item === undefined) throw new Error(`no handler for ${name}`)

  const decodePath = endpoint.pathSchema._tag === "Some" ? decoderOf(endpoint.pathSchema.value) : undefined
  const decodePayload = endpoint.payloadSchema._tag === "Some" ? decoderOf(endpoint.payloadSchema.value) : undefined
  const decodeHeaders = endpoint.headersSchema._tag === "Some" ? decoderOf(endpoint.headersSchema.value) : undefined
  const urlParams = endpoint.urlParamsSchema._tag === "Some" ? endpoint.urlParamsSchema.value : undefined
  const decodeUrlParams = urlParams === undefined ? undefined : decoderOf(urlParams)
  const arrayParams = urlParams === undefined ? new Set<string>() : arrayKeys(urlParams.ast)

  const success = endpoint.successSchema as Schema.Schema<unknown, unknown, never>
  const successStatus = HttpApiSchema.getStatusSuccess(success)
  const successIsEmpty = HttpApiSchema.isVoid(success.ast)
  const encodeSuccess = responseEncoder(success)

  const securities: Array<Security> = []
  const plain: Array<HttpApiMiddleware.TagClassAny> = []
  for (const tag of middleware) {
    if (HttpApiMiddleware.SecurityTypeId in tag) securities.push(...securityOf(tag as HttpApiMiddleware.TagClassSecurityAny))
    else plain.push(tag)
  }
  if (plain.length > 0) throw new Error(`${name}: only security middleware is supported by the request pipeline`)
  const authorize = securities.map((security) => {
    const service = Context.unsafeGet(context, security.tag) as unknown as Record<string, (credential: unknown) => Effect.Effect<unknown, unknown>>
    const check = service[security.scheme]
    if (check === undefined) throw new Error(`${security.tag.key} does not implement ${security.scheme}`)
    return { security, check }
  })

  const segments: Array<string | null> = []
  const params: Array<string | null> = []
  for (const segment of endpoint.path.split("/").slice(1)) {
    const isParam = segment.startsWith(":")
    segments.push(isParam ? null : segment)
    params.push(isParam ? segment.slice(1) : null)
  }

  const decodeInput = (input: ContractInput, payloadValue: unknown): Either.Either<Record<string, unknown>, ParseResult.ParseError> => {
    const fail = (error: ParseResult.ParseError) => Either.left(error)
    const request: Record<string, unknown> = {}
    if (decodePath !== undefined) {
      const path = decodePath(input.params)
      if (Either.isLeft(path)) return fail(path.left)
      request["path"] = path.right
    }
    if (decodePayload !== undefined) {
      const payload = decodePayload(payloadValue)
      if (Either.isLeft(payload)) return fail(payload.left)
      request["payload"] = payload.right
    }
    if (decodeHeaders !== undefined) {
      const headers = decodeHeaders(headersAsUtf8(input.headers))
      if (Either.isLeft(headers)) return fail(headers.left)
      request["headers"] = headers.right
    }
    if (decodeUrlParams !== undefined && urlParams !== undefined) {
      const query = decodeUrlParams(asArrays(searchParams(input.query), arrayParams))
      if (Either.isLeft(query)) return fail(query.left)
      request["urlParams"] = query.right
    }
    return Either.right(request)
  }

  const handle = (input: ContractInput, payloadValue: unknown): Effect.Effect<ContractAnswer> => {
    const decoded = decodeInput(input, payloadValue)
    if (Either.isLeft(decoded)) return Effect.succeed({ _tag: "Failure", error: invalid(decoded.left) })
    // The handlers' own services were taken when they were built; what the request adds (the Caller) is in
    // the request's state (RequestState), so the application's context is not copied per request.
    const work = item.handler(decoded.right as never) as Effect.Effect<unknown, unknown, never>
    return Effect.matchCause(work, {
      onFailure: failed,
      onSuccess: (value): ContractAnswer => {
        const encoded = encodeSuccess(value)
        if (Either.isLeft(encoded)) return { _tag: "Defect", cause: encoded.left }
        return { _tag: "Success", status: successStatus, body: successIsEmpty ? undefined : JSON.stringify(encoded.right) }
      }
    })
  }

  const failed = (cause: Cause.Cause<unknown>): ContractAnswer => {
    const failure = Option.getOrUndefined(Cause.failureOption(cause))
    return isApiError(failure) ? { _tag: "Failure", error: failure } : { _tag: "Defect", cause }
  }

  // Security first, as HttpApiBuilder orders it: a request without a valid key learns nothing about its body.
  const authorizeOne = ({ check, security }: typeof authorize[number], input: ContractInput, state: RequestState) => {
    const provides = security.tag.provides as Context.Tag<unknown, unknown> | undefined
    return Effect.map(check(security.read(input.headers)), (value) => {
      if (provides !== undefined) state.provided = Context.add(state.provided, provides, value) as Context.Context<never>
    })
  }
  const run = (input: ContractInput, state: RequestState): Effect.Effect<ContractAnswer> => {
    const authorized = combineSecurity(authorize.map((step) => ({ tag: step.security.tag, check: authorizeOne(step, input, state) })))
    return Effect.matchCauseEffect(authorized, {
      onFailure: (cause) => Effect.succeed(failed(cause)),
      onSuccess: () =>
        Effect.matchEffect(input.payload, {
          onFailure: (error) => Effect.succeed<ContractAnswer>({ _tag: "Failure", error }),
          onSuccess: (payloadValue) => handle(input, payloadValue)
        })
    })
  }

  return {
    name,
    method: endpoint.method,
    path: endpoint.path,
    segments,
    params,
    takesBody: endpoint.payloadSchema._tag === "Some",
    run
  }
}

/** Every endpoint of the contract, compiled; the handlers and security services come from `context`. */
export const compileContract = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>,
  context: Context.Context<never>
): ReadonlyArray<ContractRoute> => {
  const routes: Array<ContractRoute> = []
  HttpApiModule.reflect(api, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, group, middleware }) => {
      routes.push(compile(group, endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps, middleware, context))
    }
  })
  return routes
}

/** The route a method and path select, with its path parameters (percent-decoded); null when none does. */
export const matchRoute = <Route extends { readonly segments: ReadonlyArray<string | null>; readonly params: ReadonlyArray<string | null> }>(
  routes: ReadonlyArray<Route>,
  parts: ReadonlyArray<string>
): { readonly route: Route; readonly params: Record<string, string> } | "malformed" | null => {
  search: for (const route of routes) {
    if (route.segments.length !== parts.length) continue
    for (let i = 0; i < parts.length; i++) {
      const literal = route.segments[i]
      if (literal !== null && literal !== parts[i]) continue search
    }
    const params: Record<string, string> = {}
    for (let i = 0; i < parts.length; i++) {
      const name = route.params[i]
      if (name === null || name === undefined) continue
      try {
        params[name] = decodeURIComponent(parts[i] ?? "")
      } catch {
        return "malformed"
      }
    }
    return { route, params }
  }
  return null
}
