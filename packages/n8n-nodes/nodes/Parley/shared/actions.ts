/** Get and Cancel for messages and AI calls: the same shape on two paths. */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import type { ApiActionRecord, ApiCancellationAck } from './api';
import type { ParleyOperation } from './operation';
import { parleyRequestFull } from './transport';

export interface ActionKind {
	/** Path segment: `messages` or `ai-calls`. */
	path: string;
	/** Parameter name holding the id. */
	idParameter: string;
	/** Human name: `message` or `AI call`. */
	noun: string;
}

function idField(kind: ActionKind, verb: string): INodeProperties {
	return {
		displayName: kind.noun === 'message' ? 'Message ID' : 'AI Call ID',
		name: kind.idParameter,
		type: 'string',
		default: '',
		required: true,
		placeholder: '5312000000123456',
		description: `Numeric ID of the ${kind.noun} to ${verb}, as returned when it was created`,
	};
}

function readId(context: IExecuteFunctions, kind: ActionKind, itemIndex: number): string {
	const id = String(context.getNodeParameter(kind.idParameter, itemIndex)).trim();
	if (id === '') {
		throw new NodeOperationError(context.getNode(), `The ${kind.noun} ID is empty [item ${itemIndex}]`, {
			itemIndex,
		});
	}
	return id;
}

export function getAction(kind: ActionKind): ParleyOperation {
	return {
		fields: [idField(kind, 'read')],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const id = readId(this, kind, itemIndex);
			const response = await parleyRequestFull<ApiActionRecord>(this, {
				method: 'GET',
				path: `/${kind.path}/${encodeURIComponent(id)}`,
				itemIndex,
			});
			return [response.body as unknown as IDataObject];
		},
	};
}

export function cancelAction(kind: ActionKind): ParleyOperation {
	return {
		fields: [idField(kind, 'cancel')],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const id = readId(this, kind, itemIndex);
			const response = await parleyRequestFull<ApiCancellationAck>(this, {
				method: 'POST',
				path: `/${kind.path}/${encodeURIComponent(id)}/cancel`,
				itemIndex,
			});
			const ack = response.body;
			const output: IDataObject = { id: ack.id, status: ack.status, simulated: ack.test === true };
			if (ack.test === true) {
				output.test = true;
				output.note = 'Simulated with a test API key: the CRM was not changed.';
			}
			if (response.requestId !== undefined) output.requestId = response.requestId;
			return [output];
		},
	};
}
