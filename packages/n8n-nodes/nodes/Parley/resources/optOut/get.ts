/**
 * Opt-Out → Get: GET /opt-outs/{phone}. Parley answers 404 when the number may
 * be texted and called; for a workflow that is an answer, not a failure (it asks
 * before it sends), so it becomes an item with `optedOut: false` instead of an
 * error the builder would have to catch.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import type { ApiOptOut } from '../../shared/api';
import type { ParleyOperation } from '../../shared/operation';
import { parleyRequestUnlessNotFound } from '../../shared/transport';
import { notOptedOutItem, optedOutItem, optOutPath, phoneField, readPhone } from './phone';

export const get: ParleyOperation = {
	fields: [phoneField],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const phone = readPhone(this, itemIndex);
		const found = await parleyRequestUnlessNotFound<ApiOptOut>(this, {
			method: 'GET',
			path: optOutPath(phone),
			itemIndex,
		});
		return [found === undefined ? notOptedOutItem(phone) : optedOutItem(found.body)];
	},
};
