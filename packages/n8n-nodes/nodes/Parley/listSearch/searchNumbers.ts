import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import type { ApiSenderNumber, ItemList } from '../shared/api';
import { parleyRequest } from '../shared/transport';
import { matches } from './matches';

/** Sender numbers from GET /numbers, searchable by number or name. */
export async function searchNumbers(
	this: ILoadOptionsFunctions,
	filter?: string,
): Promise<INodeListSearchResult> {
	const { items } = await parleyRequest<ItemList<ApiSenderNumber>>(this, { method: 'GET', path: '/numbers' });
	return {
		results: items
			.filter((number) => matches(filter, number.phoneNumber, number.friendlyName, number.sid))
			.map((number) => ({ name: `${number.friendlyName} (${number.phoneNumber})`, value: number.sid })),
	};
}
