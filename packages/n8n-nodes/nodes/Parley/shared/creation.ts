/**
 * What Send Message and Start AI Call share: the recipient and sending number,
 * the Idempotency-Key, the record link and schedule, and the output that says whether the action was simulated.
 */
import { createHash } from 'crypto';
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { RECORD_MODULES, type ApiCreationAck } from './api';
import {
	optionalTextParameter,
	refuse,
	refuseIfExpressionFoundNothing,
	textOf,
	textParameter,
} from './parameters';
import { parleyRequestFull, type ParleyResponse } from './transport';

const MAX_IDEMPOTENCY_KEY = 128;

/** The request's `to` and `fromNumberSid`: the To field, and the sid the From picker holds. */
export function recipientAndSender(context: IExecuteFunctions, itemIndex: number): IDataObject {
	return {
		to: textParameter(context, 'to', itemIndex, { label: 'To', required: true }),
		fromNumberSid: textParameter(context, 'fromNumber', itemIndex, {
			label: 'From',
			required: true,
			extractValue: true,
		}),
	};
}

/**
 * What makes one attempt to create an action. n8n's Retry On Fail reruns the
 * node with all of these unchanged, so it resends the same key and Parley
 * replays the first answer. Anything else that runs the node again differs in
 * at least one part: another n8n (instance id), another workflow, another
 * execution, another run of the node in the same execution (loops, an AI
 * agent calling it as a tool again) or another item.
 */
export interface AttemptIdentity {
	instanceId: string;
	workflowId: string;
	executionId: string;
	nodeName: string;
	runIndex: number;
	itemIndex: number;
}

function attemptOf(context: IExecuteFunctions, itemIndex: number): AttemptIdentity {
	return {
		instanceId: context.getInstanceId(),
		workflowId: context.getWorkflow().id ?? '',
		executionId: context.getExecutionId(),
		nodeName: context.getNode().name,
		// The run index is not a method of the execute functions; the expression
		// data ($runIndex) is the public way to read it.
		runIndex: context.getWorkflowDataProxy(itemIndex).$thisRunIndex,
		itemIndex,
	};
}

/**
 * `n8n:<execution>:<run>:<item>:<digest>`: the readable parts find the n8n
 * execution from a Parley record; the digest covers every part of the attempt.
 */
export function derivedIdempotencyKey(attempt: AttemptIdentity): string {
	const digest = createHash('sha256')
		.update(
			JSON.stringify([
				attempt.instanceId,
				attempt.workflowId,
				attempt.executionId,
				attempt.nodeName,
				attempt.runIndex,
				attempt.itemIndex,
			]),
		)
		.digest('hex');
	const readable = `n8n:${attempt.executionId}:${attempt.runIndex}:${attempt.itemIndex}:${digest.slice(0, 32)}`;
	return readable.length <= MAX_IDEMPOTENCY_KEY ? readable : `n8n:${digest}`;
}

/** The Idempotency-Key of one create: the user's override, or one derived from the attempt. */
export function idempotencyKeyFor(this: IExecuteFunctions, itemIndex: number): string {
	// A key from `{{ $json.eventId }}` is often a number: it is the user's key all the same.
	const override = optionalTextParameter(this, itemIndex, {
		path: 'options.idempotencyKey',
		label: 'Idempotency Key',
		accepts: 'scalar',
		unsetMeans: 'use the key derived from this attempt',
	});
	if (override !== undefined) {
		// Parley counts characters (code points), not UTF-16 units.
		if ([...override].length > MAX_IDEMPOTENCY_KEY) {
			throw new NodeOperationError(
				this.getNode(),
				`The Idempotency Key is longer than ${MAX_IDEMPOTENCY_KEY} characters [item ${itemIndex}]`,
				{ itemIndex },
			);
		}
		return override;
	}
	return derivedIdempotencyKey(attemptOf(this, itemIndex));
}

/** Offset of `timeZone` from UTC at `instant`, in milliseconds. */
function zoneOffset(instant: number, timeZone: string): number {
	const parts = new Intl.DateTimeFormat('en-US', {
		timeZone,
		hourCycle: 'h23',
		year: 'numeric',
		month: '2-digit',
		day: '2-digit',
		hour: '2-digit',
		minute: '2-digit',
		second: '2-digit',
	}).formatToParts(new Date(instant));
	const part = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
	const asUtc = Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second'));
	return asUtc - Math.floor(instant / 1000) * 1000;
}

/**
 * Parley needs an explicit offset. n8n's date picker gives local times
 * without one, which mean the workflow's timezone.
 */
export function toOffsetTimestamp(value: unknown, timeZone: string): string | undefined {
	const text = typeof value === 'string' ? value.trim() : value === undefined || value === null ? '' : String(value);
	if (text === '') return undefined;
	if (/(Z|[+-]\d{2}:\d{2})$/.test(text)) return text;
	const wallClockAsUtc = Date.parse(`${text}Z`);
	if (Number.isNaN(wallClockAsUtc)) return text; // Parley explains what it expects
	let instant = wallClockAsUtc - zoneOffset(wallClockAsUtc, timeZone);
	instant = wallClockAsUtc - zoneOffset(instant, timeZone);
	return new Date(instant).toISOString();
}

/**
 * The module of the record link: one of Parley's modules, Leads when left
 * unset; anything else (a misspelt or empty expression) stops the item.
 */
function recordModule(context: IExecuteFunctions, itemIndex: number): string {
	const path = 'additionalFields.recordModule';
	const value: unknown = context.getNodeParameter(path, itemIndex, '');
	const module = textOf(context, itemIndex, value, { label: 'Record Module' }).trim();
	if (module === '') {
		refuseIfExpressionFoundNothing(context, itemIndex, {
			path,
			label: 'Record Module',
			unsetMeans: 'use Leads',
		});
		return 'Leads';
	}
	if (!RECORD_MODULES.some((known) => known === module)) {
		throw refuse(context, itemIndex, `Record Module is "${module}", not one of ${RECORD_MODULES.join(', ')}`);
	}
	return module;
}

/** Adds `record` and `scheduledFor` from the Additional Fields to a create body. */
export function addLinkAndSchedule(
	this: IExecuteFunctions,
	itemIndex: number,
	body: IDataObject,
): void {
	// Read first: a module that is wrong is wrong whether or not the record id is there.
	const module = recordModule(this, itemIndex);
	const recordId = optionalTextParameter(this, itemIndex, {
		path: 'additionalFields.recordId',
		label: 'Record ID',
		unsetMeans: 'link no record',
	});
	if (recordId !== undefined) body.record = { module, id: recordId };
	const schedule = { path: 'additionalFields.scheduledFor', label: 'Scheduled For', unsetMeans: 'go ahead at once' };
	const scheduledFor = toOffsetTimestamp(this.getNodeParameter(schedule.path, itemIndex, ''), this.getTimezone());
	if (scheduledFor === undefined) refuseIfExpressionFoundNothing(this, itemIndex, schedule);
	else body.scheduledFor = scheduledFor;
}

/** The creation acknowledgement, plus what an n8n user needs to read it. */
export function creationOutput(response: ParleyResponse<ApiCreationAck>, idempotencyKey: string): IDataObject {
	const ack = response.body;
	const output: IDataObject = {
		id: ack.id,
		status: ack.status,
		test: ack.test,
		simulated: ack.test,
		idempotencyKey,
		replayed: response.replayed,
	};
	if (ack.test) {
		output.note =
			'Simulated with a test API key: nothing was sent, no CRM action was created, and the test_ id cannot be read back.';
	}
	if (response.requestId !== undefined) output.requestId = response.requestId;
	return output;
}

/** POSTs the create with this item's Idempotency-Key and answers the node's output for it. */
export async function createAction(
	this: IExecuteFunctions,
	itemIndex: number,
	path: '/messages' | '/ai-calls',
	body: IDataObject,
): Promise<IDataObject[]> {
	const idempotencyKey = idempotencyKeyFor.call(this, itemIndex);
	const response = await parleyRequestFull<ApiCreationAck>(this, { method: 'POST', path, body, idempotencyKey, itemIndex });
	return [creationOutput(response, idempotencyKey)];
}
