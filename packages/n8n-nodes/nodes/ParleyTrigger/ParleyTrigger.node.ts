import type {
	IDataObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import type {
	ApiActionRecord,
	ApiConversationSummary,
	CallStatus,
	MessageStatus,
	RecordStatus,
} from '../Parley/shared/api';
import { parleyPages, parleyRequest } from '../Parley/shared/transport';

/**
 * Parley's published statuses, each marked final or not. Typed against the
 * contract, so a status added to Parley fails the build until it is listed.
 */
const STATUS_IS_FINAL: Record<RecordStatus, boolean> = {
	Queued: false,
	Sending: false,
	Sent: false,
	Ringing: false,
	'In Progress': false,
	Delivered: true,
	Undelivered: true,
	Failed: true,
	Cancelled: true,
	Received: true,
	Completed: true,
	'No Answer': true,
	Busy: true,
};
const MESSAGE_STATUSES: Record<MessageStatus, true> = {
	Queued: true,
	Sending: true,
	Sent: true,
	Delivered: true,
	Undelivered: true,
	Failed: true,
	Cancelled: true,
	Received: true,
};
const CALL_STATUSES: Record<CallStatus, true> = {
	Queued: true,
	Ringing: true,
	'In Progress': true,
	Completed: true,
	'No Answer': true,
	Busy: true,
	Failed: true,
	Cancelled: true,
};

function statusLabel(status: string): string {
	const kinds = [status in MESSAGE_STATUSES ? 'messages' : '', status in CALL_STATUSES ? 'AI calls' : '']
		.filter((kind) => kind !== '')
		.join(' and ');
	return `${STATUS_IS_FINAL[status as RecordStatus] ? 'Final' : 'In-flight'} status of ${kinds}`;
}

function isFinal(status: string | null | undefined): boolean {
	return status !== null && status !== undefined && STATUS_IS_FINAL[status as RecordStatus] === true;
}

/** How many records and conversations the static data remembers at most. */
const MAX_RECORDS = 1000;
const MAX_CONVERSATIONS = 200;

type Kind = 'message' | 'aiCall';

interface Observed {
	key: string;
	kind: Kind;
	record: ApiActionRecord;
	conversationId?: string;
}

/** A watched id Parley answered with 404 (or 400, a malformed id): nothing else in the poll is lost. */
interface Unknown {
	key: string;
	kind: Kind;
	id: string;
	error: IDataObject;
}

/** Parley's error for one id, when the id itself is the problem; undefined for anything else. */
function unknownIdError(error: NodeApiError | NodeOperationError): IDataObject | undefined {
	if (!(error instanceof NodeApiError)) return undefined;
	if (error.httpCode !== '404' && error.httpCode !== '400') return undefined;
	const details: IDataObject = {
		code: error.errorResponse?.code ?? `HTTP_${error.httpCode}`,
		message: error.errorResponse?.message ?? error.message,
	};
	if (error.errorResponse?.requestId !== undefined) details.requestId = error.errorResponse.requestId;
	return details;
}

/** What the trigger keeps between polls: last status per record, last look per conversation. */
interface PollState {
	/**
	 * Whether a poll has already run since activation. The first one only
	 * records what it sees (a baseline), as n8n's own polling triggers do, so
	 * activating a workflow never replays the history.
	 */
	baselined: boolean;
	/** [kind:id, status], oldest first. */
	records: Array<[string, string]>;
	/** [conversation id, fingerprint of its summary, whether it still had in-flight messages]. */
	conversations: Array<[string, string, boolean]>;
	/** kind:id of watched ids already reported unknown, so each is reported once. */
	unknown: string[];
}

function readState(staticData: IDataObject): PollState {
	const baselined = Array.isArray(staticData.records);
	const records = baselined ? (staticData.records as Array<[string, string]>) : [];
	const conversations = Array.isArray(staticData.conversations)
		? (staticData.conversations as Array<[string, string, boolean]>)
		: [];
	const unknown = Array.isArray(staticData.unknown) ? (staticData.unknown as string[]) : [];
	return { baselined, records, conversations, unknown };
}

function splitIds(value: unknown): string[] {
	const list = Array.isArray(value) ? value.map(String) : String(value ?? '').split(/[\s,;]+/);
	return [...new Set(list.map((id) => id.trim()).filter((id) => id !== ''))];
}

function fingerprint(summary: ApiConversationSummary): string {
	return `${summary.at ?? ''}|${summary.status ?? ''}|${summary.preview ?? ''}`;
}

async function readWatchedIds(
	context: IPollFunctions,
	known: Map<string, string>,
	refreshAll: boolean,
): Promise<{ observed: Observed[]; unknown: Unknown[] }> {
	const watched: Array<{ kind: Kind; id: string }> = [
		...splitIds(context.getNodeParameter('messageIds', '')).map((id) => ({ kind: 'message' as const, id })),
		...splitIds(context.getNodeParameter('aiCallIds', '')).map((id) => ({ kind: 'aiCall' as const, id })),
	];
	const observed: Observed[] = [];
	const unknown: Unknown[] = [];
	for (const { kind, id } of watched) {
		const key = `${kind}:${id}`;
		// A record in a final status never changes again: no need to ask.
		if (!refreshAll && isFinal(known.get(key))) continue;
		try {
			const record = await parleyRequest<ApiActionRecord>(context, {
				method: 'GET',
				path: `/${kind === 'message' ? 'messages' : 'ai-calls'}/${encodeURIComponent(id)}`,
			});
			observed.push({ key, kind, record });
		} catch (error) {
			// A wrong id must not hide the others' changes; a wrong key or an
			// unreachable server still fails the poll, as n8n should show it.
			const failure =
				error instanceof NodeApiError || error instanceof NodeOperationError
					? error
					: new NodeOperationError(context.getNode(), error as Error);
			const details = unknownIdError(failure);
			if (details === undefined) throw failure;
			unknown.push({ key, kind, id, error: details });
		}
	}
	return { observed, unknown };
}

async function readConversations(
	context: IPollFunctions,
	state: PollState,
	refreshAll: boolean,
	maxConversations: number,
): Promise<{ observed: Observed[]; conversations: Array<[string, string, boolean]> }> {
	const summaries = await parleyPages<ApiConversationSummary>(
		context,
		{ method: 'GET', path: '/conversations' },
		maxConversations,
	);
	const previous = new Map(state.conversations.map(([id, print, active]) => [id, { print, active }]));
	const observed: Observed[] = [];
	const looked: Array<[string, string, boolean]> = [];
	const seen = new Set<string>();
	for (const summary of summaries) {
		if (seen.has(summary.id)) continue; // a conversation can span pages
		seen.add(summary.id);
		const before = previous.get(summary.id);
		const print = fingerprint(summary);
		if (!refreshAll && before !== undefined && before.print === print && !before.active) {
			looked.push([summary.id, print, false]);
			continue;
		}
		// The newest page of the conversation: its latest 50 messages.
		const page = await parleyRequest<{ items: ApiActionRecord[] }>(context, {
			method: 'GET',
			path: `/conversations/${encodeURIComponent(summary.id)}`,
		});
		for (const record of page.items) {
			observed.push({ key: `message:${record.id}`, kind: 'message', record, conversationId: summary.id });
		}
		looked.push([summary.id, print, page.items.some((record) => !isFinal(record.status))]);
	}
	// Conversations not on the scanned pages keep their last look.
	const untouched = state.conversations.filter(([id]) => !seen.has(id));
	return { observed, conversations: [...untouched, ...looked].slice(-MAX_CONVERSATIONS) };
}

function unknownItem(entry: Unknown): INodeExecutionData {
	return {
		json: { id: entry.id, kind: entry.kind, status: null, previousStatus: null, final: false, error: entry.error },
	};
}

function toItem(observed: Observed, previousStatus: string | undefined): INodeExecutionData {
	const json: IDataObject = {
		...(observed.record as unknown as IDataObject),
		kind: observed.kind,
		previousStatus: previousStatus ?? null,
		final: isFinal(observed.record.status),
	};
	if (observed.conversationId !== undefined) json.conversationId = observed.conversationId;
	return { json };
}

export class ParleyTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Parley Trigger',
		name: 'parleyTrigger',
		icon: { light: 'file:../../icons/parley.svg', dark: 'file:../../icons/parley.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{ $parameter["watch"] === "all" ? "Status changes of all messages" : "Status changes of watched IDs" }}',
		description: 'Starts the workflow when a Parley message or AI call changes status',
		defaults: { name: 'Parley Trigger' },
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'parleyApi', required: true }],
		properties: [
			{
				displayName: 'Event',
				name: 'event',
				type: 'options',
				noDataExpression: true,
				options: [
					{
						name: 'Status Changed',
						value: 'statusChanged',
						description: 'A watched message or AI call changed status (Poll Status)',
					},
				],
				default: 'statusChanged',
			},
			{
				displayName: 'Watch',
				name: 'watch',
				type: 'options',
				noDataExpression: true,
				options: [
					{
						name: 'Specific Messages or AI Calls',
						value: 'ids',
						description: 'Read the given IDs on every poll until they reach a final status',
					},
					{
						name: 'All Messages the Key Can See',
						value: 'all',
						description: 'Scan the newest conversations and their latest messages (texts only)',
					},
				],
				default: 'ids',
			},
			{
				displayName: 'Message IDs',
				name: 'messageIds',
				type: 'string',
				default: '',
				placeholder: '5312000000123456, 5312000000123457',
				description: 'Comma-separated message IDs to watch',
				displayOptions: { show: { watch: ['ids'] } },
			},
			{
				displayName: 'AI Call IDs',
				name: 'aiCallIds',
				type: 'string',
				default: '',
				placeholder: '5312000000123458',
				description: 'Comma-separated AI call IDs to watch',
				displayOptions: { show: { watch: ['ids'] } },
			},
			{
				displayName: 'Emit On',
				name: 'emitOn',
				type: 'options',
				options: [
					{ name: 'Any Status Change', value: 'any' },
					{
						name: 'Final Statuses Only',
						value: 'final',
						description: 'Delivered, Undelivered, Failed, Cancelled, Received, Completed, No Answer, Busy',
					},
					{ name: 'Selected Statuses', value: 'selected' },
				],
				default: 'any',
			},
			{
				displayName: 'Statuses',
				name: 'statuses',
				type: 'multiOptions',
				options: (Object.keys(STATUS_IS_FINAL) as RecordStatus[]).map((status) => ({
					name: status,
					value: status,
					description: statusLabel(status),
				})),
				default: [],
				description: 'Emit only when a record reaches one of these statuses',
				displayOptions: { show: { emitOn: ['selected'] } },
			},
			{
				displayName: 'Max Conversations per Poll',
				name: 'maxConversations',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 200 },
				default: 20,
				description:
					'How many of the newest conversations to scan on each poll. Each changed conversation costs one request (Parley allows 60 per minute per key).',
				displayOptions: { show: { watch: ['all'] } },
			},
		],
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		const manual = this.getMode() === 'manual';
		const watch = this.getNodeParameter('watch') as string;
		const emitOn = this.getNodeParameter('emitOn') as string;
		const selected = new Set(
			emitOn === 'selected' ? (this.getNodeParameter('statuses', []) as string[]) : [],
		);
		const wanted = (status: string | null | undefined): boolean =>
			emitOn === 'any' ||
			(emitOn === 'final' && isFinal(status)) ||
			(emitOn === 'selected' && status !== null && status !== undefined && selected.has(status));

		const staticData = this.getWorkflowStaticData('node');
		const state = readState(staticData);
		const known = new Map(state.records);

		let observed: Observed[];
		let unknown: Unknown[] = [];
		let conversations = state.conversations;
		if (watch === 'all') {
			const result = await readConversations(
				this,
				state,
				manual,
				this.getNodeParameter('maxConversations', 20) as number,
			);
			observed = result.observed;
			conversations = result.conversations;
		} else {
			const result = await readWatchedIds(this, known, manual);
			observed = result.observed;
			unknown = result.unknown;
		}

		// Manual runs show the current state and leave what was seen untouched.
		if (manual) {
			const items = [
				...unknown.map(unknownItem),
				...observed.map((entry) => toItem(entry, known.get(entry.key))),
			];
			return items.length === 0 ? null : [items];
		}

		const reported = new Set(state.unknown);
		const emitted: INodeExecutionData[] = unknown
			.filter((entry) => !reported.has(entry.key))
			.map(unknownItem);
		for (const entry of observed) {
			const status = entry.record.status ?? '';
			const previous = known.get(entry.key);
			if (previous === status) continue;
			known.delete(entry.key); // re-inserted last: most recently changed
			known.set(entry.key, status);
			if (state.baselined && wanted(entry.record.status)) emitted.push(toItem(entry, previous));
		}
		staticData.unknown = unknown.map((entry) => entry.key);
		staticData.records = [...known.entries()].slice(-MAX_RECORDS);
		staticData.conversations = conversations;
		return emitted.length === 0 ? null : [emitted];
	}
}
