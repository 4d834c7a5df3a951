import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import type { ApiSenderNumber, ItemList } from '../shared/api';
import { parleyRequest } from '../shared/transport';
import { matches } from './matches';

/** What a sender number must be able to do for the operation being edited. */
type Capability = 'sms' | 'voice' | 'whatsapp';

/**
 * The capabilities Parley reports for a number. `whatsapp` is read when the
 * server reports it; a capability it does not report is unknown, not absent.
 */
interface ReportedCapabilities {
	sms?: boolean;
	voice?: boolean;
	whatsapp?: boolean;
}

function neededCapability(context: ILoadOptionsFunctions): Capability | undefined {
	const resource = context.getCurrentNodeParameter('resource');
	if (resource === 'aiCall') return 'voice';
	if (resource === 'message') return context.getCurrentNodeParameter('channel') === 'WhatsApp' ? 'whatsapp' : 'sms';
	return undefined;
}

/** Whether the number can be picked: only a capability Parley reports as false rules it out. */
function canDo(number: ApiSenderNumber, capability: Capability | undefined): boolean {
	if (capability === undefined) return true;
	const capabilities: ReportedCapabilities = number.capabilities;
	return capabilities[capability] !== false;
}

/**
 * Sender numbers from GET /numbers that can do what the operation needs (voice
 * for AI calls, SMS or WhatsApp for texts), searchable by number or name.
 */
export async function searchNumbers(
	this: ILoadOptionsFunctions,
	filter?: string,
): Promise<INodeListSearchResult> {
	const capability = neededCapability(this);
	const { items } = await parleyRequest<ItemList<ApiSenderNumber>>(this, { method: 'GET', path: '/numbers' });
	return {
		results: items
			.filter((number) => canDo(number, capability))
			.filter((number) => matches(filter, number.phoneNumber, number.friendlyName, number.sid))
			.map((number) => ({ name: `${number.friendlyName} (${number.phoneNumber})`, value: number.sid })),
	};
}
