/** Resource "Template": list the CRM message templates (up to 200, by name), to feed other nodes. */
import { defineResource } from '../../shared/operation';
import { getAll } from './getAll';

export const { operations: templateOperations, description: templateDescription } = defineResource('template', [
	{
		name: 'Get Many',
		value: 'getAll',
		action: 'Get many templates',
		description: 'List the CRM message templates (up to 200, by name)',
		operation: getAll,
	},
]);
