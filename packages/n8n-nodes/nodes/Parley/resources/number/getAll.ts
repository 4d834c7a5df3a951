/** Number → Get Many: GET /numbers, one output item per number. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ItemList } from '../../shared/api';
import type { ParleyOperation } from '../../shared/operation';
import { parleyRequest } from '../../shared/transport';

export const getAll: ParleyOperation = {
	fields: [],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const list = await parleyRequest<ItemList<IDataObject>>(this, {
			method: 'GET',
			path: '/numbers',
			itemIndex,
		});
		return list.items;
	},
};
