/** Conversation → Get Messages: GET /conversations/{id}, following nextCursor. */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import type { ApiActionRecord } from '../../shared/api';
import { conversationField, pagingFields } from '../../shared/descriptions';
import { pageLimit } from '../../shared/listing';
import type { ParleyOperation } from '../../shared/operation';
import { textParameter } from '../../shared/parameters';
import { parleyPages } from '../../shared/transport';

export const getMessages: ParleyOperation = {
	fields: [conversationField, ...pagingFields()],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const conversationId = textParameter(this, 'conversation', itemIndex, {
			label: 'Conversation',
			required: true,
			extractValue: true,
		});
		const limit = pageLimit(this, itemIndex);
		const messages = await parleyPages<ApiActionRecord>(
			this,
			{ method: 'GET', path: `/conversations/${encodeURIComponent(conversationId)}`, itemIndex },
			limit,
		);
		return messages as unknown as IDataObject[];
	},
};
