/**
 * Reading the text parameters of an item. A builder's expression on a string
 * parameter (`{{ $json.id }}`) often evaluates to a number, and one naming a
 * missing field to nothing; n8n hands either through as it is, whatever type
 * the description declares. A number is what the builder meant as its digits,
 * so it is converted; anything else that is not text stops the item with an
 * error naming the parameter and the item, before any request is made.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

export interface TextParameter {
	/** The label the user sees in the editor: `To`, `Record ID`. */
	label: string;
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

function refuse(context: IExecuteFunctions, itemIndex: number, message: string): NodeOperationError {
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

/** A text value that must not be empty once trimmed (an id, a phone number). */
export function requiredTextOf(
	context: IExecuteFunctions,
	itemIndex: number,
	value: unknown,
	parameter: TextParameter,
): string {
	const text = textOf(context, itemIndex, value, parameter).trim();
	if (text === '') {
		throw refuse(
			context,
			itemIndex,
			`${parameter.label} is empty; if it is an expression, check that the field it reads exists in this item`,
		);
	}
	return text;
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
