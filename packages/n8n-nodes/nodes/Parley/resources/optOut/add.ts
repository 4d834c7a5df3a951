/** Opt-Out → Add: PUT /opt-outs/{phone} (idempotent; recorded with source `api` and the key). */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { OPT_OUT_CHANNELS, type ApiOptOut, type OptOutChannel } from '../../shared/api';
import type { ParleyOperation } from '../../shared/operation';
import { optionalTextParameter, refuse, refuseIfExpressionFoundNothing, textOf } from '../../shared/parameters';
import { parleyRequest } from '../../shared/transport';
import { optedOutItem, optOutPath, phoneField, readPhone } from './phone';

function isChannel(value: string): value is OptOutChannel {
	return OPT_OUT_CHANNELS.some((channel) => channel === value);
}

/**
 * The channels chosen, or `undefined` for every channel when none is. An
 * expression may give a list or comma-separated text (`SMS,WhatsApp`); one that
 * found nothing stops the item, since every channel is more than was meant.
 */
function channelsOf(context: IExecuteFunctions, itemIndex: number): OptOutChannel[] | undefined {
	const parameter = { path: 'channels', label: 'Channels', unsetMeans: 'opt out of every channel' };
	const value: unknown = context.getNodeParameter(parameter.path, itemIndex, []);
	const names = (Array.isArray(value) ? value : [value])
		.flatMap((entry) => textOf(context, itemIndex, entry, parameter).split(','))
		.map((name) => name.trim())
		.filter((name) => name !== '');
	if (names.length === 0) {
		refuseIfExpressionFoundNothing(context, itemIndex, parameter);
		return undefined;
	}
	const channels: OptOutChannel[] = [];
	for (const name of names) {
		if (!isChannel(name)) {
			throw refuse(context, itemIndex, `Channels has "${name}", not one of ${OPT_OUT_CHANNELS.join(', ')}`);
		}
		if (!channels.includes(name)) channels.push(name);
	}
	return channels;
}

export const add: ParleyOperation = {
	fields: [
		phoneField,
		{
			displayName: 'Channels',
			name: 'channels',
			type: 'multiOptions',
			options: [
				{ name: 'Call', value: 'Call', description: 'AI calls' },
				{ name: 'SMS', value: 'SMS' },
				{ name: 'WhatsApp', value: 'WhatsApp' },
			],
			default: [],
			description: 'The channels the number may no longer be reached on; every channel when none is chosen',
		},
		{
			displayName: 'Reason',
			name: 'reason',
			type: 'string',
			default: '',
			placeholder: 'Asked by email',
			description: "Why, kept in the number's history (at most 500 characters)",
		},
	],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const phone = readPhone(this, itemIndex);
		// Every channel is named when none is chosen, not left out as Parley allows:
		// n8n sends no body at all for an empty object, and Parley needs one.
		const body: IDataObject = { channels: channelsOf(this, itemIndex) ?? [...OPT_OUT_CHANNELS] };
		const reason = optionalTextParameter(this, itemIndex, {
			path: 'reason',
			label: 'Reason',
			unsetMeans: 'record no reason',
		});
		if (reason !== undefined) body.reason = reason;
		const entry = await parleyRequest<ApiOptOut>(this, {
			method: 'PUT',
			path: optOutPath(phone),
			body,
			itemIndex,
		});
		return [optedOutItem(entry)];
	},
};
