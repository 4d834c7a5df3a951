/** Resource "Message": send, get, list and cancel texts. */
import type { INodeProperties } from 'n8n-workflow';
import { forOperation, type ParleyOperation } from '../../shared/operation';
import { cancel } from './cancel';
import { get } from './get';
import { getAll } from './getAll';
import { send } from './send';

export const messageOperations: Record<string, ParleyOperation> = { send, get, getAll, cancel };

export const messageDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['message'] } },
		options: [
			{
				name: 'Send',
				value: 'send',
				action: 'Send message',
				description: 'Queue or schedule an SMS or WhatsApp message',
			},
			{
				name: 'Get',
				value: 'get',
				action: 'Get message',
				description: 'Read a message record and its status',
			},
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many messages',
				description: 'List texts, newest first, filtered by status, time and number',
			},
			{
				name: 'Cancel',
				value: 'cancel',
				action: 'Cancel message',
				description: 'Cancel a scheduled message before it is sent',
			},
		],
		default: 'send',
	},
	...forOperation('message', 'send', send.fields),
	...forOperation('message', 'get', get.fields),
	...forOperation('message', 'getAll', getAll.fields),
	...forOperation('message', 'cancel', cancel.fields),
];
