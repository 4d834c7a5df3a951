/**
 * n8n-nodes-parley keeps its own copy of the /api/v1 shapes (it may not depend on the unpublished
 * @parley/core). This file holds that copy to the contract: the type checks fail `pnpm typecheck`
 * when a field changes on one side only, and the status lists are compared at run time.
 */
import type {
  ActionRecord,
  Bot,
  CallStatus as ContractCallStatus,
  CancellationAck,
  ConversationSummary,
  CreatedWebhookEndpoint,
  CreateWebhookEndpointRequest,
  CreationAck,
  Direction as ContractDirection,
  EnabledEvent as ContractEnabledEvent,
  EventPayload,
  EventType as ContractEventType,
  OptOutEventPayload,
  ListAiCallsParams,
  ListMessagesParams,
  MessageStatus as ContractMessageStatus,
  OptOut,
  OptOutChannel as ContractOptOutChannel,
  OptOutSource as ContractOptOutSource,
  PutOptOutRequest,
  RecordType as ContractRecordType,
  SenderNumber,
  Template,
  WebhookEndpoint,
  WebhookEndpointDeletion,
  WebhookEndpointList
} from "@parley/core"
import {
  ALL_OPT_OUT_CHANNELS,
  CallStatus as CallStatusSchema,
  EventType as EventTypeSchema,
  FINAL_STATUSES,
  MessageStatus as MessageStatusSchema
} from "@parley/core"
import type {
  ApiActionRecord,
  ApiBot,
  ApiCancellationAck,
  ApiConversationSummary,
  ApiCreatedWebhookEndpoint,
  ApiCreateWebhookEndpointRequest,
  ApiCreationAck,
  ApiEventPayload,
  ApiOptOut,
  ApiOptOutEventPayload,
  ApiPutOptOutRequest,
  ApiRecordListQuery,
  ApiSenderNumber,
  ApiTemplate,
  ApiWebhookEndpoint,
  ApiWebhookEndpointDeletion,
  ApiWebhookEndpointList,
  CallStatus,
  Direction,
  EnabledEvent,
  EventType,
  MessageStatus,
  OptOutChannel,
  OptOutSource,
  RecordType
} from "n8n-nodes-parley/nodes/Parley/shared/api"
import { describe, expect, it } from "vitest"
import { loadPackage } from "./support/n8n.js"

/** The contract's Schema classes as plain JSON objects. */
type Fields<A> = { -readonly [K in keyof A]: A[K] }
/** true when each type is assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

// Each line fails to compile when the package's copy and the contract disagree.
export const sameShapes: {
  senderNumber: Same<ApiSenderNumber, Fields<SenderNumber>>
  bot: Same<ApiBot, Fields<Bot>>
  template: Same<ApiTemplate, Fields<Template>>
  actionRecord: Same<ApiActionRecord, Fields<ActionRecord>>
  conversationSummary: Same<ApiConversationSummary, Fields<ConversationSummary>>
  creationAck: Same<ApiCreationAck, Fields<CreationAck>>
  cancellationAck: Same<ApiCancellationAck, Fields<CancellationAck>>
  messageStatus: Same<MessageStatus, ContractMessageStatus>
  callStatus: Same<CallStatus, ContractCallStatus>
  direction: Same<Direction, ContractDirection>
  recordType: Same<RecordType, ContractRecordType>
  eventType: Same<EventType, ContractEventType>
  enabledEvent: Same<EnabledEvent, ContractEnabledEvent>
  eventPayload: Same<ApiEventPayload, Fields<EventPayload>>
  optOutEventPayload: Same<ApiOptOutEventPayload, Fields<OptOutEventPayload>>
  createWebhookEndpointRequest: Same<ApiCreateWebhookEndpointRequest, Fields<CreateWebhookEndpointRequest>>
  webhookEndpoint: Same<ApiWebhookEndpoint, Fields<WebhookEndpoint>>
  createdWebhookEndpoint: Same<ApiCreatedWebhookEndpoint, Fields<CreatedWebhookEndpoint>>
  webhookEndpointList: Same<ApiWebhookEndpointList, Fields<typeof WebhookEndpointList.Type>>
  webhookEndpointDeletion: Same<ApiWebhookEndpointDeletion, Fields<WebhookEndpointDeletion>>
  listMessagesQuery: Same<ApiRecordListQuery, Fields<typeof ListMessagesParams.Encoded>>
  listAiCallsQuery: Same<ApiRecordListQuery, Fields<typeof ListAiCallsParams.Encoded>>
  optOut: Same<ApiOptOut, Fields<OptOut>>
  optOutChannel: Same<OptOutChannel, ContractOptOutChannel>
  optOutSource: Same<OptOutSource, ContractOptOutSource>
  putOptOutRequest: Same<ApiPutOptOutRequest, Fields<PutOptOutRequest>>
} = {
  senderNumber: true,
  bot: true,
  template: true,
  actionRecord: true,
  conversationSummary: true,
  creationAck: true,
  cancellationAck: true,
  messageStatus: true,
  callStatus: true,
  direction: true,
  recordType: true,
  eventType: true,
  enabledEvent: true,
  eventPayload: true,
  optOutEventPayload: true,
  createWebhookEndpointRequest: true,
  webhookEndpoint: true,
  createdWebhookEndpoint: true,
  webhookEndpointList: true,
  webhookEndpointDeletion: true,
  listMessagesQuery: true,
  listAiCallsQuery: true,
  optOut: true,
  optOutChannel: true,
  optOutSource: true,
  putOptOutRequest: true
}

describe("the package's copy of the contract", () => {
  it("the trigger offers every status of the contract and calls final exactly the contract's final ones", async () => {
    const loader = await loadPackage()
    const trigger = loader.types.nodes.find((node) => node.name === "parleyTrigger")!
    const statuses = trigger.properties.find((property) => property.name === "statuses")!
    const options = (statuses.options ?? []).flatMap((option) =>
      "value" in option ? [{ status: String(option.value), final: String(option.description).startsWith("Final") }] : []
    )
    const contract = [...new Set([...MessageStatusSchema.literals, ...CallStatusSchema.literals])]
    expect(options.map((option) => option.status).sort()).toEqual([...contract].sort())
    for (const option of options) expect(option.final, option.status).toBe(FINAL_STATUSES.has(option.status as ContractCallStatus))
  })

  it("Get Many offers exactly the contract's statuses of each kind in its Status filter", async () => {
    const loader = await loadPackage()
    const node = loader.types.nodes.find((type) => type.name === "parley")!
    const statusOptions = (resource: string) => {
      const filters = node.properties.find(
        (property) => property.name === "filters" && property.displayOptions?.show?.resource?.includes(resource)
      )!
      const status = (filters.options ?? []).find((option) => "name" in option && option.name === "status")!
      return ("options" in status ? status.options ?? [] : []).flatMap((option) => ("value" in option ? [option.value] : []))
    }
    expect(statusOptions("message")).toEqual([...MessageStatusSchema.literals])
    expect(statusOptions("aiCall")).toEqual([...CallStatusSchema.literals])
  })

  it("Opt-Out → Add offers exactly the contract's channels", async () => {
    const loader = await loadPackage()
    const node = loader.types.nodes.find((type) => type.name === "parley")!
    const channels = node.properties.find(
      (property) => property.name === "channels" && property.displayOptions?.show?.resource?.includes("optOut")
    )!
    const values = (channels.options ?? []).flatMap((option) => ("value" in option ? [String(option.value)] : []))
    expect(values.sort()).toEqual([...ALL_OPT_OUT_CHANNELS].sort())
  })

  it("the Events Trigger offers every event type of the contract, and All Events", async () => {
    const loader = await loadPackage()
    const trigger = loader.types.nodes.find((node) => node.name === "parleyEventsTrigger")!
    const events = trigger.properties.find((property) => property.name === "events")!
    const values = (events.options ?? []).flatMap((option) => ("value" in option ? [String(option.value)] : []))
    expect(values.sort()).toEqual(["*", ...EventTypeSchema.literals].sort())
  })
})
