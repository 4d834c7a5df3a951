/** Resource "AI Call": start, get, list and cancel outbound AI bot calls. */
import type { INodeProperties } from 'n8n-workflow';
import { forOperation, type ParleyOperation } from '../../shared/operation';
import { cancel } from './cancel';
import { get } from './get';
import { getAll } from './getAll';
import { start } from './start';

export const aiCallOperations: Record<string, ParleyOperation> = { start, get, getAll, cancel };

export const aiCallDescription: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['aiCall'] } },
		options: [
			{
				name: 'Start',
				value: 'start',
				action: 'Start AI call',
				description: 'Queue or schedule an outbound AI bot call',
			},
			{
				name: 'Get',
				value: 'get',
				action: 'Get AI call',
				description: 'Read an AI call record, its status and transcript',
			},
			{
				name: 'Get Many',
				value: 'getAll',
				action: 'Get many AI calls',
				description: 'List AI calls, newest first, filtered by status, time and number',
			},
			{
				name: 'Cancel',
				value: 'cancel',
				action: 'Cancel AI call',
				description: 'Cancel a scheduled AI call before it starts',
			},
		],
		default: 'start',
	},
	...forOperation('aiCall', 'start', start.fields),
	...forOperation('aiCall', 'get', get.fields),
	...forOperation('aiCall', 'getAll', getAll.fields),
	...forOperation('aiCall', 'cancel', cancel.fields),
];
