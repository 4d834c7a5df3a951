/**
 * What Send Message and Start AI Call share: the Idempotency-Key, the record
 * link and schedule, and the output that says whether the action was simulated.
 */
import { createHash } from 'crypto';
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import type { ApiCreationAck } from './api';
import type { ParleyResponse } from './transport';

const MAX_IDEMPOTENCY_KEY = 128;

/**
 * The same execution, node and item always give the same key, so Retry On
 * Fail (which reruns the node in the same execution) never creates twice.
 */
export function idempotencyKeyFor(this: IExecuteFunctions, itemIndex: number): string {
	const options = this.getNodeParameter('options', itemIndex, {}) as IDataObject;
	const override = typeof options.idempotencyKey === 'string' ? options.idempotencyKey.trim() : '';
	if (override !== '') {
		if (override.length > MAX_IDEMPOTENCY_KEY) {
			throw new NodeOperationError(this.getNode(), 'The Idempotency Key is longer than 128 characters', {
				itemIndex,
			});
		}
		return override;
	}
	const derived = `n8n:${this.getExecutionId()}:${this.getNode().name}:${itemIndex}`;
	return derived.length <= MAX_IDEMPOTENCY_KEY
		? derived
		: `n8n:${createHash('sha256').update(derived).digest('hex')}`;
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

/** Adds `record` and `scheduledFor` from the Additional Fields to a create body. */
export function addLinkAndSchedule(
	this: IExecuteFunctions,
	itemIndex: number,
	body: IDataObject,
): void {
	const fields = this.getNodeParameter('additionalFields', itemIndex, {}) as IDataObject;
	const recordId = typeof fields.recordId === 'string' ? fields.recordId.trim() : '';
	if (recordId !== '') {
		body.record = { module: typeof fields.recordModule === 'string' ? fields.recordModule : 'Leads', id: recordId };
	}
	const scheduledFor = toOffsetTimestamp(fields.scheduledFor, this.getTimezone());
	if (scheduledFor !== undefined) body.scheduledFor = scheduledFor;
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
