/** Resource "Number": list the sender numbers permitted to the API key, to feed other nodes. */
import { defineResource } from '../../shared/operation';
import { getAll } from './getAll';

export const { operations: numberOperations, description: numberDescription } = defineResource('number', [
	{
		name: 'Get Many',
		value: 'getAll',
		action: 'Get many numbers',
		description: 'List the sender numbers permitted to the API key',
		operation: getAll,
	},
]);
