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
