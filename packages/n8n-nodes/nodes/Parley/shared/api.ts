/**
 * The /api/v1 shapes this package reads and writes, taken from @parley/core's
 * contract as types only: nothing of Effect reaches the built package.
 */
import type {
	ActionRecord,
	Bot,
	CallStatus,
	CancellationAck,
	ConversationSummary,
	CreationAck,
	MessageStatus,
	RecordStatus,
	SenderNumber,
	Template,
} from '@parley/core';

/** Plain JSON views of the contract's Schema classes. */
type Fields<A> = { -readonly [K in keyof A]: A[K] };

export type ApiSenderNumber = Fields<SenderNumber>;
export type ApiBot = Fields<Bot>;
export type ApiTemplate = Fields<Template>;
export type ApiActionRecord = Fields<ActionRecord>;
export type ApiConversationSummary = Fields<ConversationSummary>;
export type ApiCreationAck = Fields<CreationAck>;
export type ApiCancellationAck = Fields<CancellationAck>;
export type { CallStatus, MessageStatus, RecordStatus };

export interface ItemList<A> {
	items: A[];
	managementUrl?: string | null;
}

export interface Page<A> {
	items: A[];
	nextCursor: string | null;
}

export interface ApiErrorBody {
	error?: { code?: string; message?: string; requestId?: string };
}

/** The record modules an action can be linked to (`record.module`). */
export const RECORD_MODULES = ['Leads', 'Contacts', 'Vendors', 'Deals'] as const;
