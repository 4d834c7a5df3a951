/** Template → Get Many: GET /templates, one output item per template. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ItemList } from '../../shared/api';
import type { ParleyOperation } from '../../shared/operation';
import { parleyRequest } from '../../shared/transport';

export const getAll: ParleyOperation = {
	fields: [],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const list = await parleyRequest<ItemList<IDataObject>>(this, {
			method: 'GET',
			path: '/templates',
			itemIndex,
		});
		return list.items;
	},
};
