/**
 * Handlers for the contract's endpoints, one group at a time, built by the platform's own
 * `HttpApiBuilder.group` (`handlers.handle("name", …)`; the compiler refuses a group with an endpoint
 * left unhandled). What Parley keeps is not the router the platform makes of them: it hands the group's
 * handlers, with the services they were built with, to the request pipeline (ApiRouter), which routes,
 * decodes and encodes from the contract itself. Only public API is used, so a minor release of
 * `@effect/platform` that changes how its `Handlers` object is made changes nothing here.
 */
import { type HttpApi, HttpApiBuilder, type HttpApiGroup } from "@effect/platform"
import { Chunk, Context, Effect, Layer, Option, Ref, type Scope } from "effect"

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

export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  HandlerError,
  Provides,
  HandlerR,
  BuildError,
  BuildR
>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<ApiError, ApiR, HttpApiGroup.HttpApiGroup.WithName<Groups, Name>>
  ) => Effect.Effect<HttpApiBuilder.Handlers<HandlerError, Provides, HandlerR, never>, BuildError, BuildR>
): Layer.Layer<
  GroupHandlers,
  BuildError,
  Exclude<HandlerR | BuildR | HttpApiGroup.HttpApiGroup.MiddlewareWithName<Groups, Name>, Scope.Scope>
> =>
  Layer.scoped(
    groupHandlersTag(groupName),
    Effect.gen(function*() {
      const built = yield* Ref.make(Option.none<Chunk.Chunk<HttpApiBuilder.Handlers.Item<HandlerError, HandlerR>>>())
      // The platform builds the group (and a router of it, which is not used: ApiRouter serves the contract).
      const platformGroup = HttpApiBuilder.group(api, groupName, (handlers) =>
        Effect.tap(build(handlers), (done) => Ref.set(built, Option.some(done.handlers))))
      yield* Layer.build(Layer.provide(platformGroup, HttpApiBuilder.Router.Live))
      const items = yield* Effect.flatMap(Ref.get(built), Option.match({
        onNone: () => Effect.dieMessage(`the handlers of group ${groupName} were not built`),
        onSome: Effect.succeed
      }))
      const handlers: GroupHandlers = { group: groupName, items: Chunk.toReadonlyArray(items) }
      return handlers
    })
  )
