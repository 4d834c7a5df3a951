/** What the Opt-Out operations share: the number they are about and the item they output. */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import type { ApiOptOut } from '../../shared/api';
import { textParameter } from '../../shared/parameters';

export const phoneField: INodeProperties = {
	displayName: 'Phone',
	name: 'phone',
	type: 'string',
	default: '',
	required: true,
	placeholder: '+14155234567',
	description: "The recipient's phone number in E.164 format, as Send Message and Start AI Call take it in To",
};

/** The number, trimmed; an expression that found nothing stops the item before Parley is asked. */
export function readPhone(context: IExecuteFunctions, itemIndex: number): string {
	return textParameter(context, 'phone', itemIndex, { label: 'Phone', required: true });
}

/** `/opt-outs/{phone}`, the `+` encoded so that no server reads it as a space. */
export function optOutPath(phone: string): string {
	return `/opt-outs/${encodeURIComponent(phone)}`;
}

/** An entry on the list, with `optedOut` so an IF node can branch on every answer alike. */
export function optedOutItem(entry: ApiOptOut): IDataObject {
	return { ...entry, channels: [...entry.channels], optedOut: true };
}

/** A number that is not on the list: it may be texted and called on every channel. */
export function notOptedOutItem(phone: string): IDataObject {
	return { phone, optedOut: false, channels: [] };
}
