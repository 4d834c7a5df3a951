/** Resource "Number": list the sender numbers permitted to the API key, to feed other nodes. */
import type { INodeProperties } from 'n8n-workflow';
import type { ParleyOperation } from '../../shared/operation';
import { getAll } from './getAll';

export const numberOperations: Record<string, ParleyOperation> = { getAll };

export const numberDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['number'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many numbers',
				description: 'List the sender numbers permitted to the API key',
			},
		],
		default: 'getAll',
	},
];
