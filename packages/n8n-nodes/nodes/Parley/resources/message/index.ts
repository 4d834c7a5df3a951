/** Resource "Message": send, get and cancel texts. */
import type { INodeProperties } from 'n8n-workflow';
import { forOperation, type ParleyOperation } from '../../shared/operation';
import { cancel } from './cancel';
import { get } from './get';
import { send } from './send';

export const messageOperations: Record<string, ParleyOperation> = { send, get, cancel };

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
	...forOperation('message', 'cancel', cancel.fields),
];
