/** AI Call → Start: POST /ai-calls (queues or schedules an outbound AI bot call). */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { addLinkAndSchedule, createAction, recipientAndSender } from '../../shared/creation';
import {
	botField,
	fromNumberField,
	idempotencyOptions,
	recordLinkFields,
	toField,
} from '../../shared/descriptions';
import type { ParleyOperation } from '../../shared/operation';
import { optionalTextParameter, textParameter } from '../../shared/parameters';

export const start: ParleyOperation = {
	fields: [
		toField,
		fromNumberField,
		botField,
		{
			displayName: 'Mode',
			name: 'mode',
			type: 'options',
			options: [
				{
					name: 'Follow Script',
					value: 'follow_script',
					description: "The bot follows its own script; the purpose message adds context",
				},
				{
					name: 'Deliver Specific Message',
					value: 'deliver_specific_message',
					description: 'The bot delivers the purpose message',
				},
			],
			default: 'follow_script',
		},
		{
			displayName: 'Purpose Message',
			name: 'purposeMessage',
			type: 'string',
			typeOptions: { rows: 4 },
			default: '',
			description: 'What the call is for, or the message to deliver (at most 4000 characters)',
		},
		{
			displayName: 'Additional Fields',
			name: 'additionalFields',
			type: 'collection',
			placeholder: 'Add Field',
			default: {},
			options: recordLinkFields,
		},
		idempotencyOptions,
	],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const body: IDataObject = {
			...recipientAndSender(this, itemIndex),
			botId: textParameter(this, 'bot', itemIndex, { label: 'Bot', required: true, extractValue: true }),
			mode: this.getNodeParameter('mode', itemIndex) as string,
		};
		const purposeMessage = optionalTextParameter(this, itemIndex, {
			path: 'purposeMessage',
			label: 'Purpose Message',
			keepSpacing: true,
			unsetMeans: 'let the bot follow its script alone',
		});
		if (purposeMessage !== undefined) body.purposeMessage = purposeMessage;
		addLinkAndSchedule.call(this, itemIndex, body);

		return createAction.call(this, itemIndex, '/ai-calls', body);
	},
};
