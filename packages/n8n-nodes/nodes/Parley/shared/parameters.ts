/**
 * Reading the text parameters of an item. A builder's expression on a string
 * parameter (`{{ $json.id }}`) often evaluates to a number, and one naming a
 * missing field to nothing; n8n hands either through as it is, whatever type
 * the description declares. A number is what the builder meant as its digits,
 * so it is converted; anything else that is not text stops the item with an
 * error naming the parameter and the item, before any request is made.
 *
 * An optional field has two kinds of empty. Left unset (or blank), it means
 * what the node says it means: send at once, derive the key, link no record.
 * Given as an expression that found nothing in the item, it means the builder
 * wanted a value the item does not have: that stops the item, because falling
 * back to the unset meaning would change what is sent (a reminder for tomorrow
 * going out now). The two are told apart by the parameter as the builder wrote
 * it, before n8n evaluates it.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

export interface TextParameter {
	/** The label the user sees in the editor: `To`, `Record ID`. */
	label: string;
	/** Keep the spaces around the text (a message's body is the writer's); ids and numbers are trimmed. */
	keepSpacing?: boolean;
	/**
	 * `number`: numbers are converted, booleans refused (a phone number or an id
	 * is never true). `scalar`: booleans too (an Idempotency Key may be any value
	 * that identifies the attempt).
	 */
	accepts?: 'number' | 'scalar';
}

function describe(value: unknown): string {
	if (Array.isArray(value)) return 'a list';
	if (value === null) return 'null';
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** An error on one item, named in the message as n8n names items. */
export function refuse(context: IExecuteFunctions, itemIndex: number, message: string): NodeOperationError {
	return new NodeOperationError(context.getNode(), `${message} [item ${itemIndex}]`, { itemIndex });
}

/**
 * The text of a parameter's value: text as it is, a number as its digits, and
 * nothing (an expression that found no field) as the empty text.
 */
export function textOf(
	context: IExecuteFunctions,
	itemIndex: number,
	value: unknown,
	parameter: TextParameter,
): string {
	if (typeof value === 'string') return value;
	if (value === undefined || value === null) return '';
	if (typeof value === 'bigint') return value.toString();
	if (typeof value === 'number') {
		if (!Number.isFinite(value)) {
			throw refuse(context, itemIndex, `${parameter.label} is ${String(value)}, not a value Parley can use`);
		}
		// Past 2^53 a number no longer holds every digit (CRM ids have 19), so
		// its digits would name another record: refuse rather than guess.
		if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
			throw refuse(
				context,
				itemIndex,
				`${parameter.label} is the number ${String(value)}, too large to hold all its digits exactly; pass it as text`,
			);
		}
		return String(value);
	}
	if (typeof value === 'boolean' && parameter.accepts === 'scalar') return String(value);
	throw refuse(
		context,
		itemIndex,
		`${parameter.label} must be text${parameter.accepts === 'scalar' ? ', a number or a boolean' : ' or a number'}, but its expression gave ${describe(value)}`,
	);
}

/** A text value that must not be empty once trimmed (an id, a phone number, a message's body). */
export function requiredTextOf(
	context: IExecuteFunctions,
	itemIndex: number,
	value: unknown,
	parameter: TextParameter,
): string {
	const text = textOf(context, itemIndex, value, parameter);
	if (text.trim() === '') {
		throw refuse(
			context,
			itemIndex,
			`${parameter.label} is empty; if it is an expression, check that the field it reads exists in this item`,
		);
	}
	return parameter.keepSpacing === true ? text : text.trim();
}

/** Whether the builder gave this parameter an expression (`={{ $json.when }}`), read before n8n evaluates it. */
function isExpression(context: IExecuteFunctions, itemIndex: number, path: string): boolean {
	const raw: unknown = context.getNodeParameter(path, itemIndex, null, { rawExpressions: true });
	return typeof raw === 'string' && raw.startsWith('=') && raw.slice(1).trim() !== '';
}

/** Where a field sits among the node's parameters, and what leaving it unset means. */
export interface OptionalParameter extends TextParameter {
	/** n8n's path to the parameter: `purposeMessage`, `additionalFields.recordId`, `filters.number`. */
	path: string;
	/** What the node does when the field is left unset, for the error: `send at once`. */
	unsetMeans: string;
}

/**
 * Stops the item when the field's value came out empty although an expression
 * was given for it; returns quietly when the field was left unset or blank.
 */
export function refuseIfExpressionFoundNothing(
	context: IExecuteFunctions,
	itemIndex: number,
	parameter: OptionalParameter,
): void {
	if (!isExpression(context, itemIndex, parameter.path)) return;
	throw refuse(
		context,
		itemIndex,
		`${parameter.label} is empty: its expression found nothing in this item. Check that the field it reads exists, or remove ${parameter.label} to ${parameter.unsetMeans}`,
	);
}

/**
 * An optional text field: its text, `undefined` when left unset or blank, and
 * an error on the item when its expression found nothing.
 */
export function optionalTextParameter(
	context: IExecuteFunctions,
	itemIndex: number,
	parameter: OptionalParameter,
): string | undefined {
	const value: unknown = context.getNodeParameter(parameter.path, itemIndex, '');
	const text = textOf(context, itemIndex, value, parameter);
	if (text.trim() !== '') return parameter.keepSpacing === true ? text : text.trim();
	refuseIfExpressionFoundNothing(context, itemIndex, parameter);
	return undefined;
}

/** Reads a top-level parameter as text (`extractValue` reads a resource locator's value). */
export function textParameter(
	context: IExecuteFunctions,
	name: string,
	itemIndex: number,
	parameter: TextParameter & { required?: boolean; extractValue?: boolean },
): string {
	const value: unknown = parameter.extractValue
		? context.getNodeParameter(name, itemIndex, '', { extractValue: true })
		: context.getNodeParameter(name, itemIndex, '');
	return parameter.required
		? requiredTextOf(context, itemIndex, value, parameter)
		: textOf(context, itemIndex, value, parameter);
}
