/** Fields shared by several operations: pickers, record link, schedule, paging. */
import type { INodeProperties } from 'n8n-workflow';
import { RECORD_MODULES } from './api';

export const toField: INodeProperties = {
	displayName: 'To',
	name: 'to',
	type: 'string',
	default: '',
	required: true,
	placeholder: '+14155234567',
	description: 'Recipient phone number in E.164 format',
};

/**
 * A required picker (n8n's resource locator): an item from the list `searchListMethod` answers, or one typed
 * in by its id.
 */
function picker(field: {
	displayName: string;
	name: string;
	description: string;
	listPlaceholder: string;
	searchListMethod: string;
	byIdName: string;
	idPlaceholder: string;
}): INodeProperties {
	return {
		displayName: field.displayName,
		name: field.name,
		type: 'resourceLocator',
		default: { mode: 'list', value: '' },
		required: true,
		description: field.description,
		modes: [
			{
				displayName: 'From List',
				name: 'list',
				type: 'list',
				placeholder: field.listPlaceholder,
				typeOptions: { searchListMethod: field.searchListMethod, searchable: true },
			},
			{ displayName: field.byIdName, name: 'id', type: 'string', placeholder: field.idPlaceholder },
		],
	};
}

export const fromNumberField = picker({
	displayName: 'From',
	name: 'fromNumber',
	description:
		'Sender number of the organisation, picked from the list or given by its sid. The list shows the numbers that can do what this operation needs: voice for AI calls, SMS or WhatsApp for texts.',
	listPlaceholder: 'Select a number…',
	searchListMethod: 'searchNumbers',
	byIdName: 'By Sid',
	idPlaceholder: 'PN0123456789abcdef',
});

export const templateField = picker({
	displayName: 'Template',
	name: 'template',
	description: 'CRM message template; its merge fields are filled from the linked record',
	listPlaceholder: 'Select a template…',
	searchListMethod: 'searchTemplates',
	byIdName: 'By ID',
	idPlaceholder: 'Template ID',
});

export const botField = picker({
	displayName: 'Bot',
	name: 'bot',
	description: 'Active outbound AI bot that places the call',
	listPlaceholder: 'Select a bot…',
	searchListMethod: 'searchBots',
	byIdName: 'By ID',
	idPlaceholder: 'Bot ID',
});

export const conversationField = picker({
	displayName: 'Conversation',
	name: 'conversation',
	description: 'Conversation whose messages to read',
	listPlaceholder: 'Select a conversation…',
	searchListMethod: 'searchConversations',
	byIdName: 'By ID',
	idPlaceholder: 'Conversation ID',
});

/** Optional fields of both creates: the CRM record link and the schedule. */
export const recordLinkFields: INodeProperties[] = [
	{
		displayName: 'Record Module',
		name: 'recordModule',
		type: 'options',
		options: RECORD_MODULES.map((module) => ({ name: module, value: module })),
		default: 'Leads',
		description: 'CRM module of the record to link the action to (used with Record ID)',
	},
	{
		displayName: 'Record ID',
		name: 'recordId',
		type: 'string',
		default: '',
		description: 'ID of the CRM record to link the action to; template merge fields are filled from it',
	},
	{
		displayName: 'Scheduled For',
		name: 'scheduledFor',
		type: 'dateTime',
		default: '',
		description:
			"When to send, at least 30 seconds ahead. A time without an offset is read in the workflow's timezone.",
	},
];

export const idempotencyOptions: INodeProperties = {
	displayName: 'Options',
	name: 'options',
	type: 'collection',
	placeholder: 'Add option',
	default: {},
	options: [
		{
			displayName: 'Idempotency Key',
			name: 'idempotencyKey',
			type: 'string',
			default: '',
			description:
				'Overrides the derived key (n8n instance, workflow, execution, node, run of the node and item), at most 128 characters. Parley creates one action per key: set one to send at most once across executions, for example a CRM event ID.',
		},
	],
};

export function pagingFields(): INodeProperties[] {
	return [
		{
			displayName: 'Return All',
			name: 'returnAll',
			type: 'boolean',
			default: false,
			description: 'Whether to return all results or only up to a given limit',
		},
		{
			displayName: 'Limit',
			name: 'limit',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 50,
			displayOptions: { show: { returnAll: [false] } },
			description: 'Max number of results to return',
		},
	];
}
