/** Resource "Message": send, get, list and cancel texts. */
import { defineResource } from '../../shared/operation';
import { cancel } from './cancel';
import { get } from './get';
import { getAll } from './getAll';
import { send } from './send';

export const { operations: messageOperations, description: messageDescription } = defineResource('message', [
	{
		name: 'Send',
		value: 'send',
		action: 'Send message',
		description: 'Queue or schedule an SMS or WhatsApp message',
		operation: send,
	},
	{
		name: 'Get',
		value: 'get',
		action: 'Get message',
		description: 'Read a message record and its status',
		operation: get,
	},
	{
		name: 'Get Many',
		value: 'getAll',
		action: 'Get many messages',
		description: 'List texts, newest first, filtered by status, time and number',
		operation: getAll,
	},
	{
		name: 'Cancel',
		value: 'cancel',
		action: 'Cancel message',
		description: 'Cancel a scheduled message before it is sent',
		operation: cancel,
	},
]);
