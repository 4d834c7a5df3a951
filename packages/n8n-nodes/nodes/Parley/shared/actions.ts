/** Get, Get Many and Cancel for messages and AI calls: the same shape on two paths. */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import type { ApiActionRecord, ApiCancellationAck, ApiRecordListQuery } from './api';
import { toOffsetTimestamp } from './creation';
import { pagingFields } from './descriptions';
import { pageLimit } from './listing';
import type { ParleyOperation } from './operation';
import {
	optionalTextParameter,
	refuseIfExpressionFoundNothing,
	textOf,
	textParameter,
} from './parameters';
import { parleyPages, parleyRequestFull } from './transport';

export interface ActionKind {
	/** Path segment: `messages` or `ai-calls`. */
	path: string;
	/** Parameter name holding the id. */
	idParameter: string;
	/** Human name: `message` or `AI call`. */
	noun: string;
	/** The statuses a record of this kind can have, for the Get Many filter. */
	statuses: readonly string[];
}

function idLabel(kind: ActionKind): string {
	return kind.noun === 'message' ? 'Message ID' : 'AI Call ID';
}

function idField(kind: ActionKind, verb: string): INodeProperties {
	return {
		displayName: idLabel(kind),
		name: kind.idParameter,
		type: 'string',
		default: '',
		required: true,
		placeholder: '5312000000123456',
		description: `Numeric ID of the ${kind.noun} to ${verb}, as returned when it was created`,
	};
}

/** The id of the record to read or cancel; an expression that found nothing is refused here, not sent as `undefined`. */
function readId(context: IExecuteFunctions, kind: ActionKind, itemIndex: number): string {
	return textParameter(context, kind.idParameter, itemIndex, { label: idLabel(kind), required: true });
}

export function getAction(kind: ActionKind): ParleyOperation {
	return {
		fields: [idField(kind, 'read')],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const id = readId(this, kind, itemIndex);
			const response = await parleyRequestFull<ApiActionRecord>(this, {
				method: 'GET',
				path: `/${kind.path}/${encodeURIComponent(id)}`,
				itemIndex,
			});
			return [response.body as unknown as IDataObject];
		},
	};
}

export function cancelAction(kind: ActionKind): ParleyOperation {
	return {
		fields: [idField(kind, 'cancel')],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const id = readId(this, kind, itemIndex);
			const response = await parleyRequestFull<ApiCancellationAck>(this, {
				method: 'POST',
				path: `/${kind.path}/${encodeURIComponent(id)}/cancel`,
				itemIndex,
			});
			const ack = response.body;
			const output: IDataObject = { id: ack.id, status: ack.status, simulated: ack.test === true };
			if (ack.test === true) {
				output.test = true;
				output.note = 'Simulated with a test API key: the CRM was not changed.';
			}
			if (response.requestId !== undefined) output.requestId = response.requestId;
			return [output];
		},
	};
}

function listFilters(kind: ActionKind): INodeProperties {
	const plural = kind.noun === 'message' ? 'messages' : 'AI calls';
	return {
		displayName: 'Filters',
		name: 'filters',
		type: 'collection',
		placeholder: 'Add Filter',
		default: {},
		options: [
			{
				displayName: 'Number',
				name: 'number',
				type: 'string',
				default: '',
				placeholder: '+14155234567',
				description: `Only ${plural} on this line of the organisation (the sender of outbound records, the recipient of inbound ones): a number sid or its E.164 phone number`,
			},
			{
				displayName: 'Since',
				name: 'since',
				type: 'dateTime',
				default: '',
				description: `Only ${plural} created or changed at or after this time. A time without an offset is read in the workflow's timezone.`,
			},
			{
				displayName: 'Status',
				name: 'status',
				type: 'multiOptions',
				options: kind.statuses.map((status) => ({ name: status, value: status })),
				default: [],
				description: `Only ${plural} in one of these statuses`,
			},
		],
	};
}

/** The query of a Get Many: the filters that are set, in the form Parley reads them. */
function listQuery(context: IExecuteFunctions, itemIndex: number): ApiRecordListQuery {
	const query: ApiRecordListQuery = {};
	// A filter whose expression found nothing would list everything instead.
	const unsetMeans = 'list without this filter';
	const statusFilter = { path: 'filters.status', label: 'Status', unsetMeans };
	const status: unknown = context.getNodeParameter(statusFilter.path, itemIndex, []);
	const statuses = (Array.isArray(status) ? status : [status])
		.map((entry) => textOf(context, itemIndex, entry, statusFilter).trim())
		.filter((entry) => entry !== '');
	if (statuses.length > 0) query.status = statuses.join(',');
	else refuseIfExpressionFoundNothing(context, itemIndex, statusFilter);
	const sinceFilter = { path: 'filters.since', label: 'Since', unsetMeans };
	const since = toOffsetTimestamp(context.getNodeParameter(sinceFilter.path, itemIndex, ''), context.getTimezone());
	if (since !== undefined) query.since = since;
	else refuseIfExpressionFoundNothing(context, itemIndex, sinceFilter);
	const number = optionalTextParameter(context, itemIndex, { path: 'filters.number', label: 'Number', unsetMeans });
	if (number !== undefined) query.number = number;
	return query;
}

/** GET /messages or /ai-calls, newest first, following nextCursor until the end or the limit. */
export function getManyAction(kind: ActionKind): ParleyOperation {
	return {
		fields: [...pagingFields(), listFilters(kind)],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const limit = pageLimit(this, itemIndex);
			const records = await parleyPages<ApiActionRecord>(
				this,
				{ method: 'GET', path: `/${kind.path}`, qs: { ...listQuery(this, itemIndex) }, itemIndex },
				limit,
			);
			return records as unknown as IDataObject[];
		},
	};
}
