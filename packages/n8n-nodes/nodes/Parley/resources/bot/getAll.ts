/** Bot → Get Many: GET /bots, one output item per bot. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ItemList } from '../../shared/api';
import type { ParleyOperation } from '../../shared/operation';
import { parleyRequest } from '../../shared/transport';

export const getAll: ParleyOperation = {
	fields: [],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const list = await parleyRequest<ItemList<IDataObject>>(this, {
			method: 'GET',
			path: '/bots',
			itemIndex,
		});
		return list.items;
	},
};
