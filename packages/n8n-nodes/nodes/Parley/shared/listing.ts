/** What the list operations share: reading Return All and Limit, and the unpaged lists of resources. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ItemList } from './api';
import type { ParleyOperation } from './operation';
import { parleyRequest } from './transport';

/** The Limit of a paged list, or `undefined` with Return All. */
export function pageLimit(context: IExecuteFunctions, itemIndex: number): number | undefined {
	const returnAll = context.getNodeParameter('returnAll', itemIndex) as boolean;
	return returnAll ? undefined : (context.getNodeParameter('limit', itemIndex) as number);
}

/** Get Many of an unpaged list (GET /numbers, /bots, /templates): one output item per entry. */
export function itemListAction(path: string): ParleyOperation {
	return {
		fields: [],
		async execute(this: IExecuteFunctions, itemIndex: number) {
			const list = await parleyRequest<ItemList<IDataObject>>(this, { method: 'GET', path, itemIndex });
			return list.items;
		},
	};
}
