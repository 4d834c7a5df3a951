import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import type { ApiBot, ItemList } from '../shared/api';
import { parleyRequest } from '../shared/transport';
import { matches } from './matches';

/** Active outbound bots from GET /bots, searchable by name. */
export async function searchBots(
	this: ILoadOptionsFunctions,
	filter?: string,
): Promise<INodeListSearchResult> {
	const { items } = await parleyRequest<ItemList<ApiBot>>(this, { method: 'GET', path: '/bots' });
	return {
		results: items
			.filter((bot) => matches(filter, bot.name, bot.description ?? '', bot.id))
			.map((bot) => ({ name: bot.name, value: bot.id })),
	};
}
