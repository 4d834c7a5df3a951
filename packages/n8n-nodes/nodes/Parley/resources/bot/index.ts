/** Resource "Bot": list the active outbound AI bots, to feed other nodes. */
import { defineResource } from '../../shared/operation';
import { getAll } from './getAll';

export const { operations: botOperations, description: botDescription } = defineResource('bot', [
	{
		name: 'Get Many',
		value: 'getAll',
		action: 'Get many bots',
		description: 'List the active outbound AI bots',
		operation: getAll,
	},
]);
