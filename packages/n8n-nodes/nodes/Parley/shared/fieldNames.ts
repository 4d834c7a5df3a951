/**
 * Parley's refusals name the API's fields (`record.id: no Leads record 42.`);
 * the user of the node knows them by the names in the editor. This is the one
 * table from one to the other, used to reword every relayed error.
 */

/** The node's field for each API field (a body field, a query filter). */
const NODE_FIELDS: Record<string, string> = {
	to: 'To',
	fromNumberSid: 'From',
	channel: 'Channel',
	body: 'Body',
	templateUuid: 'Template',
	record: 'Record ID',
	'record.module': 'Record Module',
	'record.id': 'Record ID',
	scheduledFor: 'Scheduled For',
	whatsAppContentSid: 'WhatsApp Content SID',
	whatsAppContentVariables: 'WhatsApp Content Variables',
	botId: 'Bot',
	mode: 'Mode',
	purposeMessage: 'Purpose Message',
	number: 'Number',
	since: 'Since',
	status: 'Status',
	phone: 'Phone',
	channels: 'Channels',
	reason: 'Reason',
};

/** API names that also appear inside a refusal's words ("exactly one of body and templateUuid"). */
const IN_TEXT: ReadonlyArray<[RegExp, string]> = [
	...['fromNumberSid', 'templateUuid', 'scheduledFor', 'whatsAppContentSid', 'botId', 'purposeMessage'].map(
		(name): [RegExp, string] => [new RegExp(`\\b${name}\\b`, 'g'), NODE_FIELDS[name] ?? name],
	),
	[/\bwhatsAppContent\b/g, 'WhatsApp Content'],
];

const VARIABLE = 'whatsAppContentVariables.';

function nodeField(apiField: string): string | undefined {
	if (apiField.startsWith(VARIABLE)) return `WhatsApp Content Variable ${apiField.slice(VARIABLE.length)}`;
	return NODE_FIELDS[apiField];
}

/** One refusal line (`field: words`) in the node's terms. */
function rewordLine(line: string): string {
	const match = /^([A-Za-z][\w.{}-]*): /.exec(line);
	const field = match === null ? undefined : nodeField(match[1] ?? '');
	const rest = match === null || field === undefined ? line : line.slice(match[0].length);
	const words = IN_TEXT.reduce((text, [pattern, name]) => text.replace(pattern, name), rest);
	return field === undefined ? words : `${field}: ${words}`;
}

/** Parley's message (one or more `field: words` lines joined by "; ") with the node's field names. */
export function inNodeTerms(message: string): string {
	return message.split('; ').map(rewordLine).join('; ');
}
