/**
 * Parley Events Trigger: the instant trigger. On activation it subscribes the
 * workflow's webhook URL to the chosen event types (POST /webhook-endpoints,
 * Stripe's model) and keeps the endpoint id and its signing secret in the
 * node's static data; on deactivation it deletes the endpoint. Every delivery
 * must carry a valid Standard Webhooks signature made with that secret and a
 * timestamp within five minutes, or it is answered 401 and starts nothing.
 */
import type {
	IDataObject,
	IHookFunctions,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import type {
	ApiCreatedWebhookEndpoint,
	ApiEventPayload,
	ApiOptOutEventPayload,
	ApiWebhookEndpointDeletion,
	ApiWebhookEndpointList,
	EnabledEvent,
	EventType,
} from '../Parley/shared/api';
import { isFinal } from '../Parley/shared/statuses';
import { parleyRequest } from '../Parley/shared/transport';
import { signatureProblem } from './signature';

const ALL_EVENTS = '*';

/** Each event type Parley publishes, named for people. Typed against the contract: a new type fails the build until it is named. */
const EVENTS: Record<EventType, { name: string; description: string }> = {
	'message.queued': {
		name: 'Message Queued',
		description: 'A text was accepted by a live key, or Parley queued its answer to a keyword (STOP, START, HELP)',
	},
	'message.sent': { name: 'Message Sent', description: 'The carrier accepted the text' },
	'message.delivered': { name: 'Message Delivered', description: 'The handset confirmed the text' },
	'message.failed': {
		name: 'Message Failed',
		description: 'The text could not be sent (Failed) or delivered (Undelivered); see errorMessage',
	},
	'message.cancelled': { name: 'Message Cancelled', description: 'A scheduled text was cancelled' },
	'message.received': {
		name: 'Message Received',
		description: 'An inbound message arrived: its text in body, its media (an MMS) as URLs in mediaUrls',
	},
	'ai_call.queued': { name: 'AI Call Queued', description: 'An AI call was accepted by a live key' },
	'ai_call.started': { name: 'AI Call Started', description: 'The AI call was answered and is in progress' },
	'ai_call.completed': {
		name: 'AI Call Completed',
		description: 'The AI call ended; the transcript is in body, the recording ID in audioFileId',
	},
	'ai_call.failed': { name: 'AI Call Failed', description: 'The AI call did not take place: No Answer, Busy or Failed' },
	'ai_call.cancelled': { name: 'AI Call Cancelled', description: 'A scheduled AI call was cancelled' },
	'crm.record_refused': {
		name: 'CRM Record Refused',
		description: "The CRM refused Parley's record of a text or call for good; Parley keeps the action",
	},
	'optout.created': {
		name: 'Opt-Out Created',
		description: 'A number was opted out (STOP, the carrier, a key, an administrator); the entry is the data',
	},
	'optout.deleted': {
		name: 'Opt-Out Deleted',
		description: 'A number was opted back in (START, the API, an administrator); the removed entry is the data',
	},
};

/** What the node keeps between activation, deliveries and deactivation. */
interface EndpointState {
	endpointId?: string;
	secret?: string;
}

function endpointState(staticData: IDataObject): EndpointState {
	return {
		endpointId: typeof staticData.endpointId === 'string' ? staticData.endpointId : undefined,
		secret: typeof staticData.secret === 'string' ? staticData.secret : undefined,
	};
}

function forgetEndpoint(staticData: IDataObject): void {
	delete staticData.endpointId;
	delete staticData.secret;
}

/** The chosen event types as Parley takes them: `["*"]` alone, or the types. */
function chosenEvents(context: IHookFunctions | IWebhookFunctions): EnabledEvent[] {
	const events = context.getNodeParameter('events', []) as EnabledEvent[];
	return events.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(events)];
}

function sameEvents(a: readonly string[], b: readonly string[]): boolean {
	return a.length === b.length && [...a].sort().join(',') === [...b].sort().join(',');
}

/** URLs compared as Parley stores them (it normalises what it is given). */
function sameUrl(a: string, b: string): boolean {
	try {
		return new URL(a).toString() === new URL(b).toString();
	} catch {
		return a === b;
	}
}

function webhookUrl(context: IHookFunctions): string {
	const url = context.getNodeWebhookUrl('default');
	if (url === undefined) {
		throw new NodeOperationError(context.getNode(), 'n8n did not give this trigger a webhook URL');
	}
	return url;
}

/** Deletes an endpoint; one that is already gone counts as deleted. */
async function deleteEndpoint(context: IHookFunctions, id: string): Promise<void> {
	try {
		await parleyRequest<ApiWebhookEndpointDeletion>(context, {
			method: 'DELETE',
			path: `/webhook-endpoints/${encodeURIComponent(id)}`,
		});
	} catch (error) {
		const failure =
			error instanceof NodeApiError ? error : new NodeOperationError(context.getNode(), error as Error);
		if (failure instanceof NodeApiError && failure.httpCode === '404') return;
		throw failure;
	}
}

function header(headers: IDataObject, name: string): string | undefined {
	const value = headers[name];
	if (Array.isArray(value)) return value.length > 0 ? String(value[0]) : undefined;
	return typeof value === 'string' ? value : undefined;
}

function isEventPayload(value: unknown): value is ApiEventPayload | ApiOptOutEventPayload {
	if (typeof value !== 'object' || value === null) return false;
	const payload = value as IDataObject;
	return (
		typeof payload.type === 'string' &&
		typeof payload.data === 'object' &&
		payload.data !== null &&
		!Array.isArray(payload.data)
	);
}

function isOptOutEvent(payload: ApiEventPayload | ApiOptOutEventPayload): payload is ApiOptOutEventPayload {
	return payload.type === 'optout.created' || payload.type === 'optout.deleted';
}

export class ParleyEventsTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Parley Instant Trigger',
		name: 'parleyEventsTrigger',
		icon: { light: 'file:../../icons/parley.svg', dark: 'file:../../icons/parley.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle:
			'={{ ($parameter["events"] || []).includes("*") ? "All events" : ($parameter["events"] || []).length === 1 ? "1 event" : ($parameter["events"] || []).length + " events" }}',
		description:
			'Starts the workflow the moment a Parley message or AI call changes status, a text arrives or a number opts out or back in (signed webhooks)',
		defaults: { name: 'Parley Instant Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'parleyApi', required: true }],
		webhooks: [{ name: 'default', httpMethod: 'POST', responseMode: 'onReceived', path: 'webhook' }],
		properties: [
			{
				displayName:
					'On activation the trigger subscribes this workflow to Parley\'s events (the API key needs the webhooks:read and webhooks:write scopes, and Parley must be able to reach n8n\'s webhook URL); on deactivation it unsubscribes. Every delivery\'s signature is checked.',
				name: 'notice',
				type: 'notice',
				default: '',
			},
			{
				displayName: 'Events',
				name: 'events',
				type: 'multiOptions',
				required: true,
				default: [],
				description: 'The events that start the workflow',
				options: [
					{ name: 'All Events', value: ALL_EVENTS, description: 'Every event type, including types Parley adds later' },
					...(Object.entries(EVENTS) as Array<[EventType, { name: string; description: string }]>)
						.map(([value, { name, description }]) => ({ name, value, description }))
						.sort((a, b) => a.name.localeCompare(b.name)),
				],
			},
		],
	};

	webhookMethods = {
		default: {
			/**
			 * Whether this node's endpoint exists as the node needs it: at the
			 * current webhook URL, for the chosen events, enabled, and with a
			 * secret the node holds. Any other endpoint at this URL (left by an
			 * earlier activation whose secret is lost, disabled after failures,
			 * or for other events) and this node's endpoint at an old URL are
			 * deleted, so `create` leaves exactly one.
			 */
			async checkExists(this: IHookFunctions): Promise<boolean> {
				const staticData = this.getWorkflowStaticData('node');
				const state = endpointState(staticData);
				const url = webhookUrl(this);
				const events = chosenEvents(this);
				const { items } = await parleyRequest<ApiWebhookEndpointList>(this, {
					method: 'GET',
					path: '/webhook-endpoints',
				});
				let usable = false;
				for (const endpoint of items) {
					const ours = endpoint.id === state.endpointId;
					if (!ours && !sameUrl(endpoint.url, url)) continue;
					if (
						ours &&
						state.secret !== undefined &&
						sameUrl(endpoint.url, url) &&
						endpoint.status === 'enabled' &&
						sameEvents(endpoint.enabledEvents, events)
					) {
						usable = true;
						continue;
					}
					await deleteEndpoint(this, endpoint.id);
				}
				if (!usable) forgetEndpoint(staticData);
				return usable;
			},

			async create(this: IHookFunctions): Promise<boolean> {
				const events = chosenEvents(this);
				if (events.length === 0) {
					throw new NodeOperationError(this.getNode(), 'Choose at least one event', {
						description: 'Pick the events that should start the workflow, or All Events.',
					});
				}
				const workflow = this.getWorkflow();
				const description = `n8n: workflow "${workflow.name ?? workflow.id ?? ''}", node "${this.getNode().name}"`;
				const endpoint = await parleyRequest<ApiCreatedWebhookEndpoint>(this, {
					method: 'POST',
					path: '/webhook-endpoints',
					body: { url: webhookUrl(this), enabledEvents: events, description: description.slice(0, 256) },
				});
				const staticData = this.getWorkflowStaticData('node');
				staticData.endpointId = endpoint.id;
				staticData.secret = endpoint.secret;
				return true;
			},

			async delete(this: IHookFunctions): Promise<boolean> {
				const staticData = this.getWorkflowStaticData('node');
				const { endpointId } = endpointState(staticData);
				if (endpointId !== undefined) {
					try {
						await deleteEndpoint(this, endpointId);
					} catch (error) {
						// Kept: the next activation finds the endpoint and reuses or deletes it.
						this.logger.warn(
							`Parley Events Trigger could not delete webhook endpoint ${endpointId}: ${(error as Error).message}`,
						);
						return false;
					}
				}
				forgetEndpoint(staticData);
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const request = this.getRequestObject();
		const refuse = (status: number, code: string, message: string): IWebhookResponseData => {
			this.getResponseObject().status(status).json({ error: { code, message } });
			return { noWebhookResponse: true };
		};

		const { secret } = endpointState(this.getWorkflowStaticData('node'));
		if (secret === undefined) {
			return refuse(
				401,
				'NO_SIGNING_SECRET',
				'This trigger holds no signing secret: deactivate and activate the workflow to subscribe again',
			);
		}
		if (request.rawBody === undefined && typeof request.readRawBody === 'function') await request.readRawBody();
		const body = request.rawBody;
		if (body === undefined) return refuse(400, 'NO_BODY', 'The delivery has no body');

		const headers = this.getHeaderData() as IDataObject;
		const problem = signatureProblem(
			secret,
			{
				id: header(headers, 'webhook-id'),
				timestamp: header(headers, 'webhook-timestamp'),
				signature: header(headers, 'webhook-signature'),
				body,
			},
			Math.floor(Date.now() / 1000),
		);
		if (problem !== undefined) return refuse(401, 'INVALID_SIGNATURE', problem);

		// The signed bytes, not n8n's parse of them, are what the event says.
		let payload: unknown;
		try {
			payload = JSON.parse(body.toString('utf8'));
		} catch {
			return refuse(400, 'INVALID_BODY', 'The delivery body is not JSON');
		}
		if (!isEventPayload(payload)) return refuse(400, 'INVALID_BODY', 'The delivery is not a Parley event');

		// An endpoint left with other event types (or a type added later) must not start the workflow.
		const events = chosenEvents(this);
		if (!events.includes(ALL_EVENTS) && !events.includes(payload.type)) return {};

		const event = {
			event: payload.type,
			eventId: header(headers, 'webhook-id') ?? null,
			eventTimestamp: payload.timestamp,
		};
		if (isOptOutEvent(payload)) {
			// The opt-out entry (phone, channels, source…) as GET /opt-outs/{phone} answers it.
			const json: IDataObject = { ...(payload.data as unknown as IDataObject), ...event, kind: 'optOut' };
			return { workflowData: [[{ json }]] };
		}
		const record = payload.data;
		const json: IDataObject = {
			...(record as unknown as IDataObject),
			...event,
			kind: payload.type.startsWith('ai_call.') ? 'aiCall' : 'message',
			final: isFinal(record.status),
		};
		return { workflowData: [[{ json }]] };
	}
}
