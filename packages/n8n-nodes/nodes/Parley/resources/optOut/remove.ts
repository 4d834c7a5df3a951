/**
 * Opt-Out → Remove: DELETE /opt-outs/{phone}, opting the number back in. A
 * number that was not opted out is already where Remove leaves it, so Parley's
 * 404 is an item with `removed: false`, as a repeated Add changes nothing.
 * A carrier's opt-out (409 OPT_OUT_NOT_REMOVABLE) is an error on the item.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import type { ParleyOperation } from '../../shared/operation';
import { parleyRequestUnlessNotFound } from '../../shared/transport';
import { notOptedOutItem, optOutPath, phoneField, readPhone } from './phone';

export const remove: ParleyOperation = {
	fields: [phoneField],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const phone = readPhone(this, itemIndex);
		const removed = await parleyRequestUnlessNotFound<unknown>(this, {
			method: 'DELETE',
			path: optOutPath(phone),
			itemIndex,
		});
		return [{ ...notOptedOutItem(phone), removed: removed !== undefined }];
	},
};
