/** Resource "Opt-Out": whether a number may be texted and called, and changing that. */
import { defineResource } from '../../shared/operation';
import { add } from './add';
import { get } from './get';
import { remove } from './remove';

export const { operations: optOutOperations, description: optOutDescription } = defineResource('optOut', [
	{
		name: 'Get',
		value: 'get',
		action: 'Get opt-out',
		description: 'Whether a number opted out, of which channels, since when and why',
		operation: get,
	},
	{
		name: 'Add',
		value: 'add',
		action: 'Add opt-out',
		description: 'Opt a number out of some or all channels',
		operation: add,
	},
	{
		name: 'Remove',
		value: 'remove',
		action: 'Remove opt-out',
		description: 'Opt a number back in',
		operation: remove,
	},
]);
