/** Message → Send: POST /messages (queues or schedules an SMS or WhatsApp text). */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { addLinkAndSchedule, createAction, recipientAndSender } from '../../shared/creation';
import {
	fromNumberField,
	idempotencyOptions,
	recordLinkFields,
	templateField,
	toField,
} from '../../shared/descriptions';
import type { ParleyOperation } from '../../shared/operation';
import { optionalTextParameter, requiredTextOf, textParameter } from '../../shared/parameters';

function contentVariables(context: IExecuteFunctions, itemIndex: number): IDataObject | undefined {
	const path = 'additionalFields.whatsAppContentVariables.variable';
	const variables = context.getNodeParameter(path, itemIndex, []) as IDataObject[];
	if (variables.length === 0) return undefined;
	const result: IDataObject = {};
	variables.forEach((variable, index) => {
		const key = requiredTextOf(context, itemIndex, variable.key, {
			label: 'WhatsApp Content Variable Placeholder',
		}).replace(/^\{\{|\}\}$/g, '');
		result[`{{${key}}}`] =
			optionalTextParameter(context, itemIndex, {
				path: `${path}[${index}].value`,
				label: `WhatsApp Content Variable {{${key}}}`,
				keepSpacing: true,
				unsetMeans: 'send it empty',
			}) ?? '';
	});
	return result;
}

export const send: ParleyOperation = {
	fields: [
		toField,
		fromNumberField,
		{
			displayName: 'Channel',
			name: 'channel',
			type: 'options',
			options: [
				{ name: 'SMS', value: 'SMS' },
				{ name: 'WhatsApp', value: 'WhatsApp', description: 'Sent immediately; cannot be scheduled' },
			],
			default: 'SMS',
		},
		{
			displayName: 'Content',
			name: 'content',
			type: 'options',
			options: [
				{ name: 'Text', value: 'body', description: 'Write the message body' },
				{ name: 'Template', value: 'template', description: 'Use a CRM message template' },
			],
			default: 'body',
		},
		{
			displayName: 'Body',
			name: 'body',
			type: 'string',
			typeOptions: { rows: 4 },
			default: '',
			required: true,
			displayOptions: { show: { content: ['body'] } },
			description: 'Message text, at most 5000 characters',
		},
		{ ...templateField, displayOptions: { show: { content: ['template'] } } },
		{
			displayName: 'Additional Fields',
			name: 'additionalFields',
			type: 'collection',
			placeholder: 'Add Field',
			default: {},
			options: [
				...recordLinkFields,
				{
					displayName: 'WhatsApp Content SID',
					name: 'whatsAppContentSid',
					type: 'string',
					default: '',
					placeholder: 'HX0123456789abcdef0123456789abcdef',
					description:
						'Approved WhatsApp content template; required when the 24-hour WhatsApp session is closed',
				},
				{
					displayName: 'WhatsApp Content Variables',
					name: 'whatsAppContentVariables',
					type: 'fixedCollection',
					typeOptions: { multipleValues: true },
					default: {},
					options: [
						{
							displayName: 'Variable',
							name: 'variable',
							values: [
								{
									displayName: 'Placeholder',
									name: 'key',
									type: 'string',
									default: '1',
									description: 'Placeholder number in the content template: 1 for {{1}}, 2 for {{2}}',
								},
								{
									displayName: 'Value',
									name: 'value',
									type: 'string',
									default: '',
								},
							],
						},
					],
				},
			],
		},
		idempotencyOptions,
	],

	async execute(this: IExecuteFunctions, itemIndex: number) {
		const body: IDataObject = {
			...recipientAndSender(this, itemIndex),
			channel: this.getNodeParameter('channel', itemIndex) as string,
		};
		if (this.getNodeParameter('content', itemIndex) === 'template') {
			body.templateUuid = textParameter(this, 'template', itemIndex, {
				label: 'Template',
				required: true,
				extractValue: true,
			});
		} else {
			// Not trimmed: spacing in a message is the writer's; but a text must say something.
			body.body = textParameter(this, 'body', itemIndex, { label: 'Body', required: true, keepSpacing: true });
		}
		addLinkAndSchedule.call(this, itemIndex, body);
		const contentSid = optionalTextParameter(this, itemIndex, {
			path: 'additionalFields.whatsAppContentSid',
			label: 'WhatsApp Content SID',
			unsetMeans: 'send without a content template',
		});
		if (contentSid !== undefined) body.whatsAppContentSid = contentSid;
		const variables = contentVariables(this, itemIndex);
		if (variables !== undefined) body.whatsAppContentVariables = variables;

		return createAction.call(this, itemIndex, '/messages', body);
	},
};
