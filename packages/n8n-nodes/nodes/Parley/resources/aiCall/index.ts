/** Resource "AI Call": start, get, list and cancel outbound AI bot calls. */
import { defineResource } from '../../shared/operation';
import { cancel } from './cancel';
import { get } from './get';
import { getAll } from './getAll';
import { start } from './start';

export const { operations: aiCallOperations, description: aiCallDescription } = defineResource('aiCall', [
	{
		name: 'Start',
		value: 'start',
		action: 'Start AI call',
		description: 'Queue or schedule an outbound AI bot call',
		operation: start,
	},
	{
		name: 'Get',
		value: 'get',
		action: 'Get AI call',
		description: 'Read an AI call record, its status and transcript',
		operation: get,
	},
	{
		name: 'Get Many',
		value: 'getAll',
		action: 'Get many AI calls',
		description: 'List AI calls, newest first, filtered by status, time and number',
		operation: getAll,
	},
	{
		name: 'Cancel',
		value: 'cancel',
		action: 'Cancel AI call',
		description: 'Cancel a scheduled AI call before it starts',
		operation: cancel,
	},
]);
