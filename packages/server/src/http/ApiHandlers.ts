/**
 * Handlers for the contract's endpoints, one group at a time, with the same
 * typed builder as `HttpApiBuilder.group` (`handlers.handle("name", …)`;
 * the compiler refuses a group with an endpoint left unhandled). What it
 * builds is not a router: it hands the group's handlers, with the services
 * they were built with, to the request pipeline (ApiRouter), which routes,
 * decodes and encodes from the contract itself.
 */
import { type HttpApi, HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup } from "@effect/platform"
import { Chunk, Context, Effect, Layer, type Scope } from "effect"
import { pipeArguments } from "effect/Pipeable"

/**
 * One group's handlers. They run on the server's runtime, whose context holds every service the layer's
 * requirements name (the type of `group` keeps them required).
 */
export interface GroupHandlers {
  readonly group: string
  readonly items: ReadonlyArray<HttpApiBuilder.Handlers.Item<unknown, unknown>>
}

/** Where a group's handlers are found, by group name. */
export const groupHandlersTag = (groupName: string) =>
  Context.GenericTag<GroupHandlers>(`@parley/server/ApiHandlers/${groupName}`)

type AnyHandlers = HttpApiBuilder.Handlers<unknown, never, unknown, HttpApiEndpoint.HttpApiEndpoint.Any>

const makeHandlers = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  handlers: Chunk.Chunk<HttpApiBuilder.Handlers.Item<unknown, unknown>>
): AnyHandlers => ({
  [HttpApiBuilder.HandlersTypeId]: { _Endpoints: (_: never) => _ },
  group,
  handlers,
  pipe() {
    return pipeArguments(this, arguments)
  },
  handle(
    name: string,
    handler: unknown,
    options?: { readonly uninterruptible?: boolean | undefined }
  ) {
    const endpoint = group.endpoints[name]
    if (endpoint === undefined) throw new Error(`no endpoint ${String(name)} in group ${group.identifier}`)
    return makeHandlers(
      group,
      Chunk.append(handlers, {
        endpoint,
        handler: handler as HttpApiEndpoint.HttpApiEndpoint.Handler<HttpApiEndpoint.HttpApiEndpoint.Any, unknown, unknown>,
        withFullRequest: false,
        uninterruptible: options?.uninterruptible ?? false
      })
    ) as never
  },
  handleRaw() {
    // The pipeline hands handlers decoded input only; no endpoint needs the raw request.
    throw new Error("handleRaw is not supported by Parley's request pipeline")
  }
}) as unknown as AnyHandlers

export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  Return
>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<ApiError, ApiR, HttpApiGroup.HttpApiGroup.WithName<Groups, Name>>
  ) => HttpApiBuilder.Handlers.ValidateReturn<Return>
): Layer.Layer<GroupHandlers, HttpApiBuilder.Handlers.Error<Return>, Exclude<HttpApiBuilder.Handlers.Context<Return>, Scope.Scope>> => {
  const tag = groupHandlersTag(groupName)
  const definition = (api as unknown as HttpApi.HttpApi.AnyWithProps).groups[groupName]
  if (definition === undefined) throw new Error(`no group ${groupName} in the contract`)
  return Layer.effect(
    tag,
    Effect.gen(function*() {
      const result = build(makeHandlers(definition, Chunk.empty()) as never) as unknown
      const handlers = (Effect.isEffect(result) ? yield* (result as Effect.Effect<AnyHandlers>) : result) as AnyHandlers
      return { group: groupName, items: Chunk.toReadonlyArray(handlers.handlers) }
    })
  ) as never
}
