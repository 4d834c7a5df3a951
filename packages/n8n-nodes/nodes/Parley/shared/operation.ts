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
