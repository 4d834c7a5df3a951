/**
 * The /api/v1 contract: every endpoint as one HttpApi definition.
 * The server's handlers, the typed client and the OpenAPI document are all
 * derived from this value; nothing restates a route or a field elsewhere.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { ErrorCatalog } from "./Errors.js"
import { finishOpenApiDocument } from "./OpenApiTransform.js"
import { ActionId, maxCharacters, type Scope } from "./Primitives.js"
import { ListOptOutsParams, OptOut, OptOutPage, OptOutPhonePath, PutOptOutRequest } from "./OptOuts.js"
import { AiCallPage, ListAiCallsParams, ListMessagesParams } from "./RecordLists.js"
import { CreateAiCallRequest, CreateMessageRequest, IDEMPOTENCY_HEADER, IdempotencyHeaders } from "./Requests.js"
import {
  ActionRecord,
  BotList,
  CancellationAck,
  ConversationPage,
  CreationAck,
  MessagePage,
  NumberList,
  TemplateList
} from "./Resources.js"
import { Authorization } from "./Security.js"
import {
  CreatedWebhookEndpoint,
  CreateWebhookEndpointRequest,
  WebhookEndpoint,
  WebhookEndpointDeletion,
  WebhookEndpointId,
  WebhookEndpointList
} from "./WebhookEndpoints.js"

/** The scope an endpoint requires; read by the server and written into the OpenAPI security requirement. */
export class RequiredScope extends Context.Tag("@parley/core/RequiredScope")<RequiredScope, Scope>() {}

const Accepted = { status: 202 } as const

const ActionIdPath = Schema.Struct({ id: ActionId })
/** A cancellation reads no body, but one sent goes through the same checks as any POST's (415, 413). */
const CANCEL_BODY = "Send no body; a body sent anyway must be JSON (415 otherwise) and is ignored."
const ConversationIdPath = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1), maxCharacters(256)).annotations({
    description: "Opaque conversation id from GET /conversations."
  })
})
const CursorParams = Schema.Struct({
  cursor: Schema.optional(
    Schema.String.pipe(maxCharacters(512, { message: "not a cursor this API issued (too long)" })).annotations({
      description: "The opaque `nextCursor` of the previous page; omit for the first page."
    })
  )
})

/** An endpoint's scope annotations: the server enforces the scope, OpenAPI shows it as the security requirement. */
const scoped = (scope: Scope) =>
  Context.make(RequiredScope, scope).pipe(
    Context.add(OpenApi.Transform, (operation) => ({
      ...operation,
      security: [{ bearer: [scope] }],
      "x-required-scope": scope,
      ...(Array.isArray(operation.parameters) ? { parameters: operation.parameters.map(requireIdempotencyHeader) } : {})
    }))
  )

/** See IdempotencyHeaders: decoded as optional, documented (and enforced) as required. */
const requireIdempotencyHeader = (parameter: unknown): unknown =>
  typeof parameter === "object" && parameter !== null && "name" in parameter &&
    parameter.name === IDEMPOTENCY_HEADER
    ? { ...parameter, required: true }
    : parameter

export class ResourcesGroup extends HttpApiGroup.make("resources")
  .add(
    HttpApiEndpoint.get("listNumbers", "/numbers")
      .addSuccess(NumberList)
      .annotate(OpenApi.Summary, "List sender numbers permitted to the key")
      .annotateContext(scoped("resources:read"))
  )
  .add(
    HttpApiEndpoint.get("listBots", "/bots")
      .addSuccess(BotList)
      .annotate(OpenApi.Summary, "List active outbound bots")
      .annotateContext(scoped("resources:read"))
  )
  .add(
    HttpApiEndpoint.get("listTemplates", "/templates")
      .addSuccess(TemplateList)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .annotate(OpenApi.Summary, "List up to 200 CRM message templates, ordered by name as people read it (Unicode root collation: case-insensitive, accents beside their letter, numbers by value)")
      .annotateContext(scoped("resources:read"))
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Numbers, bots and templates the key may use.")
{}

export class ConversationsGroup extends HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("listConversations", "/conversations")
      .setUrlParams(CursorParams)
      .addSuccess(ConversationPage)
      .annotate(
        OpenApi.Description,
        "Groups the SMS and WhatsApp records of each page of 50 CRM messages (newest first) by sender line and " +
          "counterpart. A conversation may appear on several pages; `unreadCount` covers the current page only."
      )
      .annotateContext(scoped("messages:read"))
  )
  .add(
    HttpApiEndpoint.get("getConversation", "/conversations/:id")
      .setPath(ConversationIdPath)
      .setUrlParams(CursorParams)
      .addSuccess(MessagePage)
      .addError(ErrorCatalog.NOT_FOUND)
      .annotate(OpenApi.Description, "The messages of one conversation visible to the key, newest first, 50 a page.")
      .annotateContext(scoped("messages:read"))
  )
  .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
  .addError(ErrorCatalog.CRM_UNAVAILABLE)
  .middleware(Authorization)
{}

export class MessagesGroup extends HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("createMessage", "/messages")
      .setPayload(CreateMessageRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(CreationAck, Accepted)
      .addError(ErrorCatalog.IDEMPOTENCY_KEY_REQUIRED)
      .addError(ErrorCatalog.IDEMPOTENCY_KEY_REUSED)
      .addError(ErrorCatalog.ACTION_PROCESSING)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.ALLOWANCE_EXHAUSTED)
      .addError(ErrorCatalog.DESTINATION_NOT_ALLOWED)
      .addError(ErrorCatalog.RECIPIENT_OPTED_OUT)
      .addError(ErrorCatalog.OUTSIDE_SENDING_HOURS)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(
        OpenApi.Description,
        "Queues (202 `accepted`) or schedules (202 `scheduled`) a text. 202 means accepted, never delivered: " +
          "follow the record's status or subscribe to events. Exactly one of `body` and `templateUuid`. " +
          "WhatsApp is sent immediately and needs a WhatsApp-connected sender; outside the 24-hour session " +
          "`whatsAppContentSid` is required, and a live WhatsApp message outside the organisation's sending hours " +
          "is refused (403 OUTSIDE_SENDING_HOURS) rather than held. Test keys answer `test: true` with a `test_` id and change nothing."
      )
      .annotateContext(scoped("messages:write"))
  )
  .add(
    HttpApiEndpoint.get("listMessages", "/messages")
      .setUrlParams(ListMessagesParams)
      .addSuccess(MessagePage)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .annotate(
        OpenApi.Description,
        "The texts (SMS and WhatsApp, both directions) visible to the key and to the connected CRM account, " +
          "newest first, 50 a page, filtered by `status`, `since` and `number`. A key restricted to numbers sees " +
          "only their lines; naming a number outside the restriction is 403 RESOURCE_DENIED."
      )
      .annotateContext(scoped("messages:read"))
  )
  .add(
    HttpApiEndpoint.get("getMessage", "/messages/:id")
      .setPath(ActionIdPath)
      .addSuccess(ActionRecord)
      .addError(ErrorCatalog.NOT_FOUND)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .annotateContext(scoped("messages:read"))
  )
  .add(
    HttpApiEndpoint.post("cancelMessage", "/messages/:id/cancel")
      .setPath(ActionIdPath)
      .addSuccess(CancellationAck)
      .addError(ErrorCatalog.NOT_FOUND)
      .addError(ErrorCatalog.ACTION_NOT_CANCELLABLE)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(OpenApi.Description, "Only Queued actions scheduled more than 30 seconds ahead can be cancelled. " +
        CANCEL_BODY)
      .annotateContext(scoped("messages:write"))
  )
  .middleware(Authorization)
{}

export class AiCallsGroup extends HttpApiGroup.make("aiCalls")
  .add(
    HttpApiEndpoint.post("createAiCall", "/ai-calls")
      .setPayload(CreateAiCallRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(CreationAck, Accepted)
      .addError(ErrorCatalog.IDEMPOTENCY_KEY_REQUIRED)
      .addError(ErrorCatalog.IDEMPOTENCY_KEY_REUSED)
      .addError(ErrorCatalog.ACTION_PROCESSING)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.ALLOWANCE_EXHAUSTED)
      .addError(ErrorCatalog.DESTINATION_NOT_ALLOWED)
      .addError(ErrorCatalog.RECIPIENT_OPTED_OUT)
      .addError(ErrorCatalog.AI_CALLS_DISABLED)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(
        OpenApi.Description,
        "Queues or schedules an outbound AI bot call. The transcript arrives in the record's `body`."
      )
      .annotateContext(scoped("calls:write"))
  )
  .add(
    HttpApiEndpoint.get("listAiCalls", "/ai-calls")
      .setUrlParams(ListAiCallsParams)
      .addSuccess(AiCallPage)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .annotate(
        OpenApi.Description,
        "The AI calls visible to the key and to the connected CRM account, newest first, 50 a page, filtered by " +
          "`status`, `since` and `number` (the calling line), with the same cursor rules as GET /messages."
      )
      .annotateContext(scoped("calls:read"))
  )
  .add(
    HttpApiEndpoint.get("getAiCall", "/ai-calls/:id")
      .setPath(ActionIdPath)
      .addSuccess(ActionRecord)
      .addError(ErrorCatalog.NOT_FOUND)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .annotateContext(scoped("calls:read"))
  )
  .add(
    HttpApiEndpoint.post("cancelAiCall", "/ai-calls/:id/cancel")
      .setPath(ActionIdPath)
      .addSuccess(CancellationAck)
      .addError(ErrorCatalog.NOT_FOUND)
      .addError(ErrorCatalog.ACTION_NOT_CANCELLABLE)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.CRM_UNAVAILABLE)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(OpenApi.Description, "Only Queued calls scheduled more than 30 seconds ahead can be cancelled. " +
        CANCEL_BODY)
      .annotateContext(scoped("calls:write"))
  )
  .middleware(Authorization)
{}

const WebhookEndpointPath = Schema.Struct({ id: WebhookEndpointId })

export class WebhookEndpointsGroup extends HttpApiGroup.make("webhookEndpoints")
  .add(
    HttpApiEndpoint.post("createWebhookEndpoint", "/webhook-endpoints")
      .setPayload(CreateWebhookEndpointRequest)
      .addSuccess(CreatedWebhookEndpoint, { status: 201 })
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.CRM_PERMISSION_DENIED)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(
        OpenApi.Description,
        "Subscribes a URL to the organisation's signed events of the listed types (`[\"*\"]` for all). The answer " +
          "carries the `whsec_` signing secret, the only time it is shown. An endpoint receives every event of " +
          "its types in the organisation, so it takes a key without number or bot restrictions and a connected " +
          "CRM account that sees every action. No Idempotency-Key: a retried creation may make a second endpoint; " +
          "list and delete the extra one."
      )
      .annotateContext(scoped("webhooks:write"))
  )
  .add(
    HttpApiEndpoint.get("listWebhookEndpoints", "/webhook-endpoints")
      .addSuccess(WebhookEndpointList)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .annotate(OpenApi.Description, "The organisation's endpoints, oldest first, enabled and disabled; never their secrets.")
      .annotateContext(scoped("webhooks:read"))
  )
  .add(
    HttpApiEndpoint.get("getWebhookEndpoint", "/webhook-endpoints/:id")
      .setPath(WebhookEndpointPath)
      .addSuccess(WebhookEndpoint)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.NOT_FOUND)
      .annotateContext(scoped("webhooks:read"))
  )
  .add(
    HttpApiEndpoint.del("deleteWebhookEndpoint", "/webhook-endpoints/:id")
      .setPath(WebhookEndpointPath)
      .addSuccess(WebhookEndpointDeletion)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .addError(ErrorCatalog.NOT_FOUND)
      .annotate(OpenApi.Description, "Stops and removes the endpoint; events not yet delivered to it are dropped.")
      .annotateContext(scoped("webhooks:write"))
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Where the organisation's signed events (see `webhooks`) are posted. Endpoints made here and with " +
      "`parley webhooks add` are the same; every key and the CLI see them all."
  )
{}

export class OptOutsGroup extends HttpApiGroup.make("optOuts")
  .add(
    HttpApiEndpoint.get("listOptOuts", "/opt-outs")
      .setUrlParams(ListOptOutsParams)
      .addSuccess(OptOutPage)
      .addError(ErrorCatalog.RESOURCE_DENIED)
      .annotate(
        OpenApi.Description,
        "The organisation's opt-outs, newest first, 50 a page, optionally for one `phone`. The list names recipients " +
          "of every line, so it takes a key without number or bot restrictions."
      )
      .annotateContext(scoped("optouts:read"))
  )
  .add(
    HttpApiEndpoint.get("getOptOut", "/opt-outs/:phone")
      .setPath(OptOutPhonePath)
      .addSuccess(OptOut)
      .addError(ErrorCatalog.NOT_FOUND)
      .annotate(OpenApi.Description, "The number's opt-out: which channels, since when, from what. 404 when it may be texted and called.")
      .annotateContext(scoped("optouts:read"))
  )
  .add(
    HttpApiEndpoint.put("putOptOut", "/opt-outs/:phone")
      .setPath(OptOutPhonePath)
      .setPayload(PutOptOutRequest)
      .addSuccess(OptOut)
      .addError(ErrorCatalog.PAYLOAD_TOO_LARGE)
      .addError(ErrorCatalog.UNSUPPORTED_MEDIA_TYPE)
      .annotate(
        OpenApi.Description,
        "Opts the number out of the channels given (all when omitted), recorded with source `api` and the key. " +
          "Idempotent: the same request again changes nothing. From then on creations to it are refused " +
          "(403 RECIPIENT_OPTED_OUT) and accepted actions to it fail when they come due."
      )
      .annotateContext(scoped("optouts:write"))
  )
  .add(
    HttpApiEndpoint.del("deleteOptOut", "/opt-outs/:phone")
      .setPath(OptOutPhonePath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ErrorCatalog.NOT_FOUND)
      .addError(ErrorCatalog.OPT_OUT_NOT_REMOVABLE)
      .annotate(
        OpenApi.Description,
        "Opts the number back in (204). A carrier's opt-out (the recipient is unsubscribed at the carrier) is " +
          "not lifted by a key: 409 OPT_OUT_NOT_REMOVABLE; the recipient's START or an administrator lifts it."
      )
      .annotateContext(scoped("optouts:write"))
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Who may not be texted or called. A recipient's STOP reply, a carrier's unsubscribed refusal and administrators " +
      "add to the same list; see the Consent guide."
  )
{}

export class ParleyApi extends HttpApi.make("parley")
  .add(ResourcesGroup)
  .add(ConversationsGroup)
  .add(MessagesGroup)
  .add(AiCallsGroup)
  .add(WebhookEndpointsGroup)
  .add(OptOutsGroup)
  .addError(ErrorCatalog.INVALID_REQUEST)
  .addError(ErrorCatalog.SCOPE_MISSING)
  // Authorization is on each group, not here: an API-level middleware would also guard
  // unknown routes and the extra routes (docs, health), which must answer without a key.
  .prefix("/api/v1")
  .annotate(OpenApi.Title, "Parley API")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(OpenApi.Transform, finishOpenApiDocument)
  .annotate(
    OpenApi.Description,
    "Queue or schedule texts (SMS, WhatsApp), start outbound AI bot calls, and read back conversations, " +
      "messages and call records for a CRM organisation. Every error body is " +
      "`{\"error\": {\"code\", \"message\", \"requestId\"}}` and every response carries `X-Request-ID`."
  )
{}


/** The scope each endpoint requires, read back from the contract, keyed `group.endpoint` (e.g. `messages.createMessage`). */
export const endpointScopes: ReadonlyMap<string, Scope> = (() => {
  const scopes = new Map<string, Scope>()
  HttpApi.reflect(ParleyApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, group, mergedAnnotations }) => {
      const scope = Context.getOption(mergedAnnotations, RequiredScope)
      if (scope._tag === "Some") scopes.set(`${group.identifier}.${endpoint.name}`, scope.value)
    }
  })
  return scopes
})()
