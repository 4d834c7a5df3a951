import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import type { ApiTemplate, ItemList } from '../shared/api';
import { parleyRequest } from '../shared/transport';
import { matches } from './matches';

/** CRM message templates from GET /templates, searchable by name or text. */
export async function searchTemplates(
	this: ILoadOptionsFunctions,
	filter?: string,
): Promise<INodeListSearchResult> {
	const { items } = await parleyRequest<ItemList<ApiTemplate>>(this, { method: 'GET', path: '/templates' });
	return {
		results: items
			.filter((template) => matches(filter, template.name, template.body))
			.map((template) => ({
				name: template.recordType ? `${template.name} (${template.recordType})` : template.name,
				value: template.id,
			})),
	};
}
