/** Resource "Conversation": list conversations and read one conversation's messages. */
import { defineResource } from '../../shared/operation';
import { getAll } from './getAll';
import { getMessages } from './getMessages';

export const { operations: conversationOperations, description: conversationDescription } = defineResource(
	'conversation',
	[
		{
			name: 'Get Many',
			value: 'getAll',
			action: 'Get many conversations',
			description: 'List conversations, newest first',
			operation: getAll,
		},
		{
			name: 'Get Messages',
			value: 'getMessages',
			action: 'Get messages of a conversation',
			description: 'List the messages of one conversation',
			operation: getMessages,
		},
	],
);
