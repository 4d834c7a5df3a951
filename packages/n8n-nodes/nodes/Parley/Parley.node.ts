import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { searchBots } from './listSearch/searchBots';
import { searchConversations } from './listSearch/searchConversations';
import { searchNumbers } from './listSearch/searchNumbers';
import { searchTemplates } from './listSearch/searchTemplates';
import { aiCallDescription, aiCallOperations } from './resources/aiCall';
import { botDescription, botOperations } from './resources/bot';
import { conversationDescription, conversationOperations } from './resources/conversation';
import { messageDescription, messageOperations } from './resources/message';
import { numberDescription, numberOperations } from './resources/number';
import { optOutDescription, optOutOperations } from './resources/optOut';
import { templateDescription, templateOperations } from './resources/template';
import { actionSubtitle, type ParleyOperation } from './shared/operation';

const operations: Record<string, Record<string, ParleyOperation>> = {
	message: messageOperations,
	aiCall: aiCallOperations,
	conversation: conversationOperations,
	number: numberOperations,
	bot: botOperations,
	template: templateOperations,
	optOut: optOutOperations,
};

/** Parley's details of a failure: its code, HTTP status, advice and request id. */
function errorDetails(error: Error): IDataObject {
	const details: IDataObject = {};
	if (error instanceof NodeApiError) {
		if (error.description) details.description = error.description;
		if (error.httpCode) details.httpCode = error.httpCode;
		const code = error.context.code ?? (error.errorResponse?.code as string | undefined);
		if (code !== undefined) details.code = code;
		const requestId = error.errorResponse?.requestId;
		if (requestId !== undefined) details.requestId = requestId;
	}
	return details;
}

/**
 * The item a failed input item becomes when the node continues on fail.
 *
 * "Continue (using error output)": n8n moves an item to the error output only
 * when its JSON holds nothing but `error`, `message` and `details` (an item's
 * `error` property would also route it, but n8n then replaces its JSON with
 * the bare message). So the details go under `details`, and n8n adds the input
 * item's fields to it on the error branch.
 *
 * "Continue": the item stays on the one output with the details at the top,
 * where `{{ $json.code }}` finds them.
 */
function failedItem(error: Error, itemIndex: number, toErrorOutput: boolean): INodeExecutionData {
	const details = errorDetails(error);
	const json: IDataObject = toErrorOutput
		? { error: error.message, details }
		: { error: error.message, ...details };
	return { json, pairedItem: { item: itemIndex } };
}

const properties: INodeTypeDescription['properties'] = [
	{
		displayName: 'Resource',
		name: 'resource',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'AI Call', value: 'aiCall' },
			{ name: 'Bot', value: 'bot' },
			{ name: 'Conversation', value: 'conversation' },
			{ name: 'Message', value: 'message' },
			{ name: 'Number', value: 'number' },
			{ name: 'Opt-Out', value: 'optOut' },
			{ name: 'Template', value: 'template' },
		],
		default: 'message',
	},
	...messageDescription,
	...aiCallDescription,
	...conversationDescription,
	...numberDescription,
	...botDescription,
	...templateDescription,
	...optOutDescription,
];

export class Parley implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Parley',
		name: 'parley',
		icon: { light: 'file:../../icons/parley.svg', dark: 'file:../../icons/parley.dark.svg' },
		group: ['output'],
		version: 1,
		subtitle: actionSubtitle(properties),
		description: 'Send SMS and WhatsApp messages and start AI calls with Parley',
		defaults: { name: 'Parley' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'parleyApi', required: true }],
		properties,
	};

	methods = {
		listSearch: { searchNumbers, searchBots, searchTemplates, searchConversations },
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const output: INodeExecutionData[] = [];
		for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
			try {
				const resource = this.getNodeParameter('resource', itemIndex) as string;
				const operationName = this.getNodeParameter('operation', itemIndex) as string;
				const operation = operations[resource]?.[operationName];
				if (operation === undefined) {
					throw new NodeOperationError(
						this.getNode(),
						`The operation "${operationName}" of resource "${resource}" is not known [item ${itemIndex}]`,
						{ itemIndex },
					);
				}
				const results = await operation.execute.call(this, itemIndex);
				for (const json of results) output.push({ json, pairedItem: { item: itemIndex } });
			} catch (error) {
				const nodeError =
					error instanceof NodeApiError || error instanceof NodeOperationError
						? error
						: new NodeOperationError(this.getNode(), error as Error, { itemIndex });
				if (this.continueOnFail()) {
					output.push(failedItem(nodeError, itemIndex, this.getNode().onError === 'continueErrorOutput'));
					continue;
				}
				throw nodeError;
			}
		}
		return [output];
	}
}
