/** Resource "Bot": list the active outbound AI bots, to feed other nodes. */
import type { INodeProperties } from 'n8n-workflow';
import type { ParleyOperation } from '../../shared/operation';
import { getAll } from './getAll';

export const botOperations: Record<string, ParleyOperation> = { getAll };

export const botDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['bot'] } },
		options: [
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many bots',
				description: 'List the active outbound AI bots',
			},
		],
		default: 'getAll',
	},
];
