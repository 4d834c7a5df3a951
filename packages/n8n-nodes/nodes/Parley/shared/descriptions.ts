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

export const fromNumberField: INodeProperties = {
	displayName: 'From',
	name: 'fromNumber',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description:
		'Sender number of the organisation, picked from the list or given by its sid. The list shows the numbers that can do what this operation needs: voice for AI calls, SMS or WhatsApp for texts.',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a number…',
			typeOptions: { searchListMethod: 'searchNumbers', searchable: true },
		},
		{
			displayName: 'By Sid',
			name: 'id',
			type: 'string',
			placeholder: 'PN0123456789abcdef',
		},
	],
};

export const templateField: INodeProperties = {
	displayName: 'Template',
	name: 'template',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description: 'CRM message template; its merge fields are filled from the linked record',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a template…',
			typeOptions: { searchListMethod: 'searchTemplates', searchable: true },
		},
		{
			displayName: 'By ID',
			name: 'id',
			type: 'string',
			placeholder: 'Template ID',
		},
	],
};

export const botField: INodeProperties = {
	displayName: 'Bot',
	name: 'bot',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description: 'Active outbound AI bot that places the call',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a bot…',
			typeOptions: { searchListMethod: 'searchBots', searchable: true },
		},
		{
			displayName: 'By ID',
			name: 'id',
			type: 'string',
			placeholder: 'Bot ID',
		},
	],
};

export const conversationField: INodeProperties = {
	displayName: 'Conversation',
	name: 'conversation',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description: 'Conversation whose messages to read',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a conversation…',
			typeOptions: { searchListMethod: 'searchConversations', searchable: true },
		},
		{
			displayName: 'By ID',
			name: 'id',
			type: 'string',
			placeholder: 'Conversation ID',
		},
	],
};

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
