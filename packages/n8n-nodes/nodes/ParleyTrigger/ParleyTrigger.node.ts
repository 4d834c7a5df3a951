import type {
	IDataObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import type { ApiActionRecord } from '../Parley/shared/api';
import { isFinal, RECORD_STATUSES, statusLabel } from '../Parley/shared/statuses';
import { parleyPages, parleyRequest } from '../Parley/shared/transport';

/** How many records the static data remembers at most. */
const MAX_RECORDS = 1000;
/** Parley's page size for lists. */
const PAGE_SIZE = 50;
/** Pages read per list and poll at most: 1,000 changed records, as many as the static data remembers. */
const MAX_PAGES = 20;
/**
 * Watching everything re-reads records changed this long before the latest
 * change seen: a change committed late (stamped before one already seen) is
 * still found, and the remembered status keeps it from being emitted twice.
 */
const OVERLAP_MS = 60_000;

type Kind = 'message' | 'aiCall';

interface Observed {
	key: string;
	kind: Kind;
	record: ApiActionRecord;
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

/** What the trigger keeps between polls: last status per record, the latest change seen. */
interface PollState {
	/**
	 * Whether a poll has already run since activation. The first one only
	 * records what it sees (a baseline), as n8n's own polling triggers do, so
	 * activating a workflow never replays the history.
	 */
	baselined: boolean;
	/** [kind:id, status], oldest first. */
	records: Array<[string, string]>;
	/**
	 * Whether a poll has already listed everything (watching everything). A
	 * workflow activated by a version that scanned conversations has a
	 * baseline of messages but not of AI calls: its first listing is a
	 * baseline again.
	 */
	listed: boolean;
	/** Watching everything: the latest `modified` seen (ms, Parley's clock), where the next poll starts. */
	watermark: number | undefined;
	/** kind:id of watched ids already reported unknown, so each is reported once. */
	unknown: string[];
}

function readState(staticData: IDataObject): PollState {
	const baselined = Array.isArray(staticData.records);
	const records = baselined ? (staticData.records as Array<[string, string]>) : [];
	const watermark = typeof staticData.watermark === 'string' ? Date.parse(staticData.watermark) : Number.NaN;
	const unknown = Array.isArray(staticData.unknown) ? (staticData.unknown as string[]) : [];
	return {
		baselined,
		listed: staticData.listed === true,
		records,
		watermark: Number.isNaN(watermark) ? undefined : watermark,
		unknown,
	};
}

function splitIds(value: unknown): string[] {
	const list = Array.isArray(value) ? value.map(String) : String(value ?? '').split(/[\s,;]+/);
	return [...new Set(list.map((id) => id.trim()).filter((id) => id !== ''))];
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

const LIST_PATHS: Record<Kind, string> = { message: '/messages', aiCall: '/ai-calls' };

function modifiedAt(record: ApiActionRecord): number | undefined {
	const at = record.modified === null || record.modified === undefined ? Number.NaN : Date.parse(record.modified);
	return Number.isNaN(at) ? undefined : at;
}

/**
 * Everything the key can see, through GET /messages and GET /ai-calls: the
 * records whose `modified` is at or after the watermark (the latest
 * `modified` seen, in Parley's clock), less an overlap. Without a watermark
 * (the first poll) the newest page of each list sets one. Manual runs read
 * the newest page of each list: the current state.
 */
async function readLists(
	context: IPollFunctions,
	kinds: Kind[],
	watermark: number | undefined,
	manual: boolean,
): Promise<{ observed: Observed[]; watermark: number | undefined }> {
	const observed = new Map<string, Observed>();
	let latest = watermark;
	const see = (kind: Kind, records: ApiActionRecord[]) => {
		for (const record of records) {
			observed.set(`${kind}:${record.id}`, { key: `${kind}:${record.id}`, kind, record });
			const at = modifiedAt(record);
			if (at !== undefined && (latest === undefined || at > latest)) latest = at;
		}
	};
	const newestPage = async (kind: Kind) =>
		await parleyPages<ApiActionRecord>(context, { method: 'GET', path: LIST_PATHS[kind] }, PAGE_SIZE);

	if (manual) {
		for (const kind of kinds) see(kind, await newestPage(kind));
		return { observed: [...observed.values()], watermark };
	}
	if (latest === undefined) {
		for (const kind of kinds) see(kind, await newestPage(kind));
	}
	if (latest !== undefined) {
		// Pages are ordered by creation, so an old record changed lately is on a later page: read them all.
		const since = new Date(latest - OVERLAP_MS).toISOString();
		for (const kind of kinds) {
			see(
				kind,
				await parleyPages<ApiActionRecord>(
					context,
					{ method: 'GET', path: LIST_PATHS[kind], qs: { since } },
					MAX_PAGES * PAGE_SIZE,
				),
			);
		}
	}
	return { observed: [...observed.values()], watermark: latest };
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
	return { json };
}

export class ParleyTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Parley Polling Trigger',
		name: 'parleyTrigger',
		icon: { light: 'file:../../icons/parley.svg', dark: 'file:../../icons/parley.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{ $parameter["watch"] === "all" ? "Status changes of all messages and AI calls" : "Status changes of watched IDs" }}',
		description: "Starts the workflow when a Parley message or AI call changes status, checked on n8n's polling schedule",
		defaults: { name: 'Parley Polling Trigger' },
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
						name: 'All Messages and AI Calls the Key Can See',
						value: 'all',
						description: 'List what changed since the previous poll (GET /messages and GET /ai-calls)',
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
				options: RECORD_STATUSES.map((status) => ({
					name: status,
					value: status,
					description: statusLabel(status),
				})),
				default: [],
				description: 'Emit only when a record reaches one of these statuses',
				displayOptions: { show: { emitOn: ['selected'] } },
			},
			{
				displayName: 'Include',
				name: 'include',
				type: 'multiOptions',
				options: [
					{ name: 'AI Calls', value: 'aiCall', description: 'Needs the calls:read scope' },
					{ name: 'Messages', value: 'message', description: 'Needs the messages:read scope' },
				],
				default: ['message', 'aiCall'],
				description: 'Which records to watch',
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
		let watermark = state.watermark;
		if (watch === 'all') {
			const include = this.getNodeParameter('include', ['message', 'aiCall']) as Kind[];
			const kinds = (['message', 'aiCall'] as const).filter((kind) => include.includes(kind));
			const result = await readLists(this, kinds, watermark, manual);
			observed = result.observed;
			watermark = result.watermark;
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

		const baselined = watch === 'all' ? state.listed : state.baselined;
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
			if (baselined && wanted(entry.record.status)) emitted.push(toItem(entry, previous));
		}
		staticData.unknown = unknown.map((entry) => entry.key);
		staticData.records = [...known.entries()].slice(-MAX_RECORDS);
		delete staticData.conversations; // kept by versions that scanned conversations
		if (watch === 'all') staticData.listed = true;
		if (watermark === undefined) delete staticData.watermark;
		else staticData.watermark = new Date(watermark).toISOString();
		return emitted.length === 0 ? null : [emitted];
	}
}
