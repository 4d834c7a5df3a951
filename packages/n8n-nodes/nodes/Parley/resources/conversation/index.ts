/** Resource "Conversation": list conversations and read one conversation's messages. */
import type { INodeProperties } from 'n8n-workflow';
import { forOperation, type ParleyOperation } from '../../shared/operation';
import { getAll } from './getAll';
import { getMessages } from './getMessages';

export const conversationOperations: Record<string, ParleyOperation> = { getAll, getMessages };

export const conversationDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['conversation'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many conversations',
				description: 'List conversations, newest first',
			},
			{
				name: 'Get Messages',
				value: 'getMessages',
				action: 'Get messages of a conversation',
				description: 'List the messages of one conversation',
			},
		],
		default: 'getAll',
	},
	...forOperation('conversation', 'getAll', getAll.fields),
	...forOperation('conversation', 'getMessages', getMessages.fields),
];
