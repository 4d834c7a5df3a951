/** Conversation → Get Many: GET /conversations, following nextCursor. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ApiConversationSummary } from '../../shared/api';
import { pagingFields } from '../../shared/descriptions';
import { pageLimit } from '../../shared/listing';
import type { ParleyOperation } from '../../shared/operation';
import { parleyPages } from '../../shared/transport';

export const getAll: ParleyOperation = {
	fields: pagingFields(),

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const limit = pageLimit(this, itemIndex);
		const conversations = await parleyPages<ApiConversationSummary>(
			this,
			{ method: 'GET', path: '/conversations', itemIndex },
			limit,
		);
		return conversations as unknown as IDataObject[];
	},
};
