/** What one operation file provides: its fields and how it runs for one input item. */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';

export interface ParleyOperation {
	/** The fields of this operation (display options are added by the resource). */
	fields: INodeProperties[];
	/** Runs the operation for one input item and returns its output items' JSON. */
	execute(this: IExecuteFunctions, itemIndex: number): Promise<IDataObject[]>;
}

/** Shows each field only for the given resource and operation. */
export function forOperation(
	resource: string,
	operation: string,
	fields: INodeProperties[],
): INodeProperties[] {
	return fields.map((field) => ({
		...field,
		displayOptions: {
			...field.displayOptions,
			show: { ...field.displayOptions?.show, resource: [resource], operation: [operation] },
		},
	}));
}

/** One entry of a resource's Operation dropdown, with the operation it runs. */
export interface OperationEntry {
	/** The dropdown's label: `Get Many`. */
	name: string;
	/** The parameter value: `getAll`. */
	value: string;
	/** The action n8n lists in its panel and subtitle: `Get many bots`. */
	action: string;
	description: string;
	operation: ParleyOperation;
}

export interface ParleyResource {
	/** The operations by value, for the node's execute. */
	operations: Record<string, ParleyOperation>;
	/** The Operation dropdown (defaulting to the first entry) and every operation's fields. */
	description: INodeProperties[];
}

/** A resource from its operations, in the order the dropdown shows them. */
export function defineResource(resource: string, entries: OperationEntry[]): ParleyResource {
	const operations: Record<string, ParleyOperation> = {};
	for (const entry of entries) operations[entry.value] = entry.operation;
	const firstOperation = entries[0]?.value ?? '';
	const dropdown: INodeProperties = {
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: [resource] } },
		options: entries.map(({ name, value, action, description }) => ({ name, value, action, description })),
		default: firstOperation,
	};
	return {
		operations,
		description: [
			dropdown,
			...entries.flatMap((entry) => forOperation(resource, entry.value, entry.operation.fields)),
		],
	};
}

/**
 * The node's subtitle: the action name of the chosen resource and operation
 * ("Send message"), read from the operation options so it never shows raw
 * values. Falls back to the operation value for anything unknown.
 */
export function actionSubtitle(properties: INodeProperties[]): string {
	const actions: Record<string, string> = {};
	for (const property of properties) {
		const resources = property.displayOptions?.show?.resource;
		if (property.name !== 'operation' || !Array.isArray(resources)) continue;
		for (const option of property.options ?? []) {
			if (!('value' in option) || !('action' in option) || typeof option.action !== 'string') continue;
			for (const resource of resources) actions[`${String(resource)}:${String(option.value)}`] = option.action;
		}
	}
	const key = '$parameter["resource"] + ":" + $parameter["operation"]';
	return `={{ ${JSON.stringify(actions)}[${key}] ?? $parameter["operation"] }}`;
}
