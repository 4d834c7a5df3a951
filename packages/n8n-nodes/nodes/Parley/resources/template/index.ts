/** Resource "Template": list the CRM message templates (up to 200, by name), to feed other nodes. */
import type { INodeProperties } from 'n8n-workflow';
import type { ParleyOperation } from '../../shared/operation';
import { getAll } from './getAll';

export const templateOperations: Record<string, ParleyOperation> = { getAll };

export const templateDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['template'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many templates',
				description: 'List the CRM message templates (up to 200, by name)',
			},
		],
		default: 'getAll',
	},
];
