import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import type { ApiConversationSummary, Page } from '../shared/api';
import { parleyRequest } from '../shared/transport';
import { matches } from './matches';

/** Conversations from GET /conversations, one page at a time, searchable by name or phone. */
export async function searchConversations(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const page = await parleyRequest<Page<ApiConversationSummary>>(this, {
		method: 'GET',
		path: '/conversations',
		...(paginationToken ? { qs: { cursor: paginationToken } } : {}),
	});
	const seen = new Set<string>();
	const results = page.items
		.filter((conversation) => {
			if (seen.has(conversation.id)) return false; // a conversation can span pages
			seen.add(conversation.id);
			return matches(filter, conversation.name, conversation.phone);
		})
		.map((conversation) => ({ name: `${conversation.name} (${conversation.phone})`, value: conversation.id }));
	return page.nextCursor === null ? { results } : { results, paginationToken: page.nextCursor };
}
