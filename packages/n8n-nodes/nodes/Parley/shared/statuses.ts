/**
 * Parley's published statuses: which belong to texts and which to AI calls,
 * and which are final (the record never changes again). Typed against the
 * package's copy of the contract, so a status added to Parley fails the build
 * until it is placed here; n8n-nodes-tests compares the lists with the
 * contract at run time.
 */
import type { CallStatus, MessageStatus, RecordStatus } from './api';

const STATUS_IS_FINAL: Record<RecordStatus, boolean> = {
	Queued: false,
	Sending: false,
	Sent: false,
	Ringing: false,
	'In Progress': false,
	Delivered: true,
	Undelivered: true,
	Failed: true,
	Cancelled: true,
	Received: true,
	Completed: true,
	'No Answer': true,
	Busy: true,
};
const MESSAGE: Record<MessageStatus, true> = {
	Queued: true,
	Sending: true,
	Sent: true,
	Delivered: true,
	Undelivered: true,
	Failed: true,
	Cancelled: true,
	Received: true,
};
const CALL: Record<CallStatus, true> = {
	Queued: true,
	Ringing: true,
	'In Progress': true,
	Completed: true,
	'No Answer': true,
	Busy: true,
	Failed: true,
	Cancelled: true,
};

/** Every status, messages' and AI calls'. */
export const RECORD_STATUSES = Object.keys(STATUS_IS_FINAL) as RecordStatus[];
/** The statuses of a text, in the contract's order. */
export const MESSAGE_STATUSES = Object.keys(MESSAGE) as MessageStatus[];
/** The statuses of an AI call, in the contract's order. */
export const CALL_STATUSES = Object.keys(CALL) as CallStatus[];

export function isFinal(status: string | null | undefined): boolean {
	return status !== null && status !== undefined && STATUS_IS_FINAL[status as RecordStatus] === true;
}

/** "Final status of messages and AI calls", "In-flight status of AI calls", … */
export function statusLabel(status: string): string {
	const kinds = [status in MESSAGE ? 'messages' : '', status in CALL ? 'AI calls' : '']
		.filter((kind) => kind !== '')
		.join(' and ');
	return `${isFinal(status) ? 'Final' : 'In-flight'} status of ${kinds}`;
}
