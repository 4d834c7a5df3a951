/**
 * The /api/v1 shapes this package reads and writes, as plain types.
 *
 * They mirror @parley/core's contract (packages/core/src/contract) field for
 * field. The package cannot depend on @parley/core, not even for types: a
 * published package may name only registry versions, and the core is not
 * published. packages/n8n-nodes-tests checks every type here against the
 * contract (test/contract-types.test.ts), so the two cannot drift apart.
 */

export type MessageStatus =
	| 'Queued'
	| 'Sending'
	| 'Sent'
	| 'Delivered'
	| 'Undelivered'
	| 'Failed'
	| 'Cancelled'
	| 'Received';

export type CallStatus =
	| 'Queued'
	| 'Ringing'
	| 'In Progress'
	| 'Completed'
	| 'No Answer'
	| 'Busy'
	| 'Failed'
	| 'Cancelled';

export type RecordStatus = MessageStatus | CallStatus;

export type Direction = 'Outbound' | 'Inbound';

export type RecordType = 'SMS' | 'WhatsApp' | 'Call';

export interface ApiSenderNumber {
	sid: string;
	phoneNumber: string;
	friendlyName: string;
	capabilities: { readonly sms?: boolean; readonly voice?: boolean };
	voiceOutboundBotId: string | null;
}

export interface ApiBot {
	id: string;
	name: string;
	description?: string | null;
}

export interface ApiTemplate {
	id: string;
	crmId: string;
	recordType?: string | null;
	name: string;
	body: string;
}

export interface ApiLinkedRecord {
	readonly module: string;
	readonly id: string;
	readonly name: string | null;
}

interface ApiPerson {
	readonly id: string;
	readonly name: string;
}

export interface ApiActionRecord {
	id: string;
	name?: string | null;
	senderName?: string | null;
	linkedSenders?: {
		readonly Contact?: string | null;
		readonly Account?: string | null;
		readonly Vendor?: string | null;
		readonly Lead?: string | null;
	};
	from?: string | null;
	to?: string | null;
	direction?: Direction | null;
	body: string;
	/** An inbound message's media URLs; Parley always writes it ([] when there is none). */
	mediaUrls?: readonly string[];
	status?: RecordStatus | null;
	type?: RecordType | null;
	botId: string | null;
	read?: string | null;
	at?: string | null;
	scheduledFor?: string | null;
	owner?: ApiPerson | null;
	record?: ApiPerson | null;
	linkedRecords: readonly ApiLinkedRecord[];
	sid?: string | null;
	audioFileId?: string | null;
	errorMessage?: string | null;
	sentBy?: string;
	modified?: string | null;
}

export interface ApiConversationSummary {
	id: string;
	phone: string;
	name: string;
	preview?: string;
	at?: string | null;
	unread: boolean;
	owner?: ApiPerson | null;
	direction?: Direction | null;
	status?: RecordStatus | null;
	type?: RecordType | null;
	sentBy?: string;
	linkedRecords: readonly ApiLinkedRecord[];
	unreadCount: number;
	line?: string;
}

export interface ApiCreationAck {
	id: string;
	status: 'accepted' | 'scheduled';
	test: boolean;
}

export interface ApiCancellationAck {
	id: string;
	status: 'cancelled';
	test?: boolean;
}

export interface ItemList<A> {
	items: A[];
	managementUrl?: string | null;
}

export interface Page<A> {
	items: A[];
	nextCursor: string | null;
}

/** GET /messages and GET /ai-calls query parameters, as sent (statuses comma-separated). */
export interface ApiRecordListQuery {
	cursor?: string;
	status?: string;
	since?: string;
	number?: string;
}

/** The kinds of signed event about a text or call: their data is its record. */
export type ActionEventType =
	| 'message.queued'
	| 'message.sent'
	| 'message.delivered'
	| 'message.failed'
	| 'message.cancelled'
	| 'message.received'
	| 'ai_call.queued'
	| 'ai_call.started'
	| 'ai_call.completed'
	| 'ai_call.failed'
	| 'ai_call.cancelled'
	| 'crm.record_refused';

/** The kinds of signed event about the opt-out list: their data is the entry recorded or removed. */
export type OptOutEventType = 'optout.created' | 'optout.deleted';

/** The kinds of signed event Parley posts to webhook endpoints. */
export type EventType = ActionEventType | OptOutEventType;

/** An event type, or `*` for every type (including types added later). */
export type EnabledEvent = EventType | '*';

/** One signed delivery's body about a text or call: the record after the change. */
export interface ApiEventPayload {
	type: ActionEventType;
	timestamp: string;
	data: ApiActionRecord;
}

/** One signed delivery's body about the opt-out list: the entry recorded (created) or removed (deleted). */
export interface ApiOptOutEventPayload {
	type: OptOutEventType;
	timestamp: string;
	data: ApiOptOut;
}

export interface ApiCreateWebhookEndpointRequest {
	url: string;
	enabledEvents: readonly EnabledEvent[];
	description?: string;
}

export interface ApiWebhookEndpoint {
	id: string;
	url: string;
	enabledEvents: readonly EnabledEvent[];
	description: string | null;
	status: 'enabled' | 'disabled';
	disabledReason: string | null;
	createdAt: string;
	lastSuccessAt: string | null;
}

/** The creation's answer: the endpoint and, this once, its `whsec_…` signing secret. */
export interface ApiCreatedWebhookEndpoint extends ApiWebhookEndpoint {
	secret: string;
}

export interface ApiWebhookEndpointList {
	items: readonly ApiWebhookEndpoint[];
}

export interface ApiWebhookEndpointDeletion {
	id: string;
	deleted: true;
}

/** A way Parley reaches a recipient, as the opt-out list names it. */
export type OptOutChannel = 'SMS' | 'WhatsApp' | 'Call';

export const OPT_OUT_CHANNELS: readonly OptOutChannel[] = ['SMS', 'WhatsApp', 'Call'];

export type OptOutSource = 'keyword' | 'carrier' | 'api' | 'console' | 'crm' | 'cli';

/** GET/PUT /opt-outs/{phone}: the number's entry on the opt-out list. */
export interface ApiOptOut {
	phone: string;
	channels: readonly OptOutChannel[];
	source: OptOutSource;
	reason: string | null;
	cause: string | null;
	createdAt: string;
}

/** PUT /opt-outs/{phone}'s body: every channel when `channels` is left out. */
export interface ApiPutOptOutRequest {
	channels?: readonly OptOutChannel[];
	reason?: string;
}

export interface ApiErrorBody {
	error?: { code?: string; message?: string; requestId?: string };
}

/** The record modules an action can be linked to (`record.module`). */
export const RECORD_MODULES = ['Leads', 'Contacts', 'Vendors', 'Deals'] as const;
