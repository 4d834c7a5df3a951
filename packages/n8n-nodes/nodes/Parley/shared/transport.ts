/**
 * The only place that talks HTTP to Parley. Every request goes through the
 * "Parley API" credential; every non-2xx answer becomes a NodeApiError that
 * carries Parley's own error code and message (its fields named as the node
 * names them), the item it concerns and what to do next.
 */
import type {
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	ILoadOptionsFunctions,
	IN8nHttpFullResponse,
	INode,
	IPollFunctions,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';
import type { ApiErrorBody, Page } from './api';
import { inNodeTerms } from './fieldNames';

export type ParleyContext = IExecuteFunctions | IHookFunctions | ILoadOptionsFunctions | IPollFunctions;

export const CREDENTIAL_NAME = 'parleyApi';

export interface ParleyRequest {
	method: IHttpRequestMethods;
	/** Path below /api/v1, starting with a slash. */
	path: string;
	qs?: IDataObject;
	body?: IDataObject;
	idempotencyKey?: string;
	/** The input item this request is for, named in errors. */
	itemIndex?: number;
}

export interface ParleyResponse<A> {
	body: A;
	requestId: string | undefined;
	replayed: boolean;
}

interface ParleyCredentials {
	baseUrl: string;
	apiKey: string;
}

/** Accepts the server address with or without a trailing slash or /api/v1. */
export function apiRoot(baseUrl: string): string {
	return `${baseUrl.trim().replace(/\/+(api\/v1\/?)?$/, '')}/api/v1`;
}

function header(response: IN8nHttpFullResponse, name: string): string | undefined {
	const value = response.headers[name] ?? response.headers[name.toLowerCase()];
	if (Array.isArray(value)) return value.length > 0 ? String(value[0]) : undefined;
	return value === undefined || value === null ? undefined : String(value);
}

function itemLabel(itemIndex: number | undefined): string {
	return itemIndex === undefined ? '' : ` [item ${itemIndex}]`;
}

/** What the user should do about an error, by Parley's status and code. */
function advice(status: number, code: string, retryAfter: string | undefined): string {
	if (code === 'OAUTH_REQUIRED' || code === 'IDENTITY_CHANGED') {
		return "Reconnect the organisation's CRM account in Parley's CRM OAuth setup, then run the workflow again.";
	}
	if (code === 'ACTION_PROCESSING') {
		return 'An earlier request with the same Idempotency-Key is still being processed. Retry unchanged in a few seconds (Retry On Fail does this).';
	}
	if (code === 'IDEMPOTENCY_KEY_REUSED') {
		return 'This Idempotency-Key was already used with a different payload. Leave Options > Idempotency Key empty so the node derives one, or use a new key.';
	}
	if (code === 'RECIPIENT_OPTED_OUT') {
		return 'The recipient opted out of this channel (a STOP reply, the carrier, the CRM or an administrator), so Parley sent nothing. Do not retry: Parley refuses this channel for the number until the recipient opts back in (a START reply). Opt-Out → Get shows when and why; remove an opt-out (Opt-Out → Remove) only when the recipient has asked to be contacted again.';
	}
	if (code === 'OPT_OUT_NOT_REMOVABLE') {
		return "The carrier recorded this opt-out (the recipient is unsubscribed there), so an API key cannot lift it: only the recipient's own START reply or a Parley administrator (`parley optouts remove`, the console) can.";
	}
	if (code === 'PILOT_PENDING') {
		return "The organisation's pilot is not open yet. Try again once Parley enables it.";
	}
	switch (status) {
		case 400:
			return 'Parley rejected the input. Fix the field named in the message.';
		case 401:
			return 'The API key in the "Parley API" credential is invalid, revoked or expired. Create a new key in Developer access and update the credential.';
		case 403:
			return 'The API key lacks the scope or access to this number or bot, or the subscription or seat is inactive.';
		case 404:
			return 'Nothing with this id is visible to the API key. Simulated ids (test_…) from test keys cannot be read back.';
		case 409:
			return 'The action was already dispatched: only Queued actions scheduled more than 30 seconds ahead can be cancelled.';
		case 413:
			return 'The request body is too large. Shorten the message body or variables.';
		case 429: {
			const seconds = Number(retryAfter);
			const wait = Number.isFinite(seconds) && seconds > 0 ? seconds : 60;
			return `Parley's rate limit (60 requests per minute per API key) was reached. Retry after ${wait} seconds: turn on Retry On Fail with Wait Between Tries of at least ${wait * 1000} ms, or slow the workflow down.`;
		}
		case 503:
			return 'Parley is not set up or not available yet. Try again later.';
		default:
			return status >= 500
				? 'Parley or the CRM failed. Try again later; Retry On Fail is safe because creates carry an Idempotency-Key.'
				: 'See the message from Parley.';
	}
}

export function parleyApiError(
	node: INode,
	response: IN8nHttpFullResponse,
	itemIndex: number | undefined,
): NodeApiError {
	const body = (response.body ?? {}) as ApiErrorBody;
	const status = response.statusCode;
	const code = body.error?.code ?? `HTTP_${status}`;
	const apiMessage = body.error?.message ?? `Parley answered HTTP ${status}`;
	const requestId = body.error?.requestId ?? header(response, 'x-request-id');
	const retryAfter = header(response, 'retry-after');
	const details: JsonObject = { code, message: apiMessage, httpCode: String(status) };
	if (requestId !== undefined) details.requestId = requestId;
	if (retryAfter !== undefined) details.retryAfter = retryAfter;
	return new NodeApiError(node, details, {
		// Parley's own words stay in the details; the message names the node's fields.
		message: `${code}: ${inNodeTerms(apiMessage)}${itemLabel(itemIndex)}`,
		description: `${advice(status, code, retryAfter)}${requestId === undefined ? '' : ` (Parley request ${requestId})`}`,
		httpCode: String(status),
		...(itemIndex === undefined ? {} : { itemIndex }),
	});
}

/** Sends one request and returns Parley's answer, whatever its status. */
async function send(context: ParleyContext, request: ParleyRequest): Promise<IN8nHttpFullResponse> {
	const credentials = await context.getCredentials<ParleyCredentials>(CREDENTIAL_NAME);
	const url = `${apiRoot(credentials.baseUrl)}${request.path}`;
	const headers: IDataObject = { Accept: 'application/json' };
	if (request.idempotencyKey !== undefined) headers['Idempotency-Key'] = request.idempotencyKey;
	const options: IHttpRequestOptions = {
		method: request.method,
		url,
		headers,
		json: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
	};
	if (request.qs !== undefined) options.qs = request.qs;
	if (request.body !== undefined) options.body = request.body;

	let response: IN8nHttpFullResponse;
	try {
		response = (await context.helpers.httpRequestWithAuthentication.call(
			context,
			CREDENTIAL_NAME,
			options,
		)) as IN8nHttpFullResponse;
	} catch (error) {
		const reason = error instanceof Error ? error.message : String(error);
		throw new NodeApiError(context.getNode(), { message: reason, url } as JsonObject, {
			message: `Could not reach Parley at ${url}: ${reason}${itemLabel(request.itemIndex)}`,
			description:
				'Check the Base URL in the "Parley API" credential and that the Parley server is running and reachable from n8n.',
			...(request.itemIndex === undefined ? {} : { itemIndex: request.itemIndex }),
		});
	}
	return response;
}

function ok(response: IN8nHttpFullResponse): boolean {
	return response.statusCode >= 200 && response.statusCode < 300;
}

/** Sends one request and returns Parley's answer with its request id. */
export async function parleyRequestFull<A>(
	context: ParleyContext,
	request: ParleyRequest,
): Promise<ParleyResponse<A>> {
	const response = await send(context, request);
	if (!ok(response)) throw parleyApiError(context.getNode(), response, request.itemIndex);
	return {
		body: response.body as A,
		requestId: header(response, 'x-request-id'),
		replayed: header(response, 'idempotent-replayed') === 'true',
	};
}

export async function parleyRequest<A>(context: ParleyContext, request: ParleyRequest): Promise<A> {
	const response = await parleyRequestFull<A>(context, request);
	return response.body;
}

/**
 * Sends one request whose 404 NOT_FOUND is an answer, not a failure (a number
 * that is not on the opt-out list): `undefined` then (a 204's answer is `{ body }`
 * all the same); any other refusal throws.
 */
export async function parleyRequestUnlessNotFound<A>(
	context: ParleyContext,
	request: ParleyRequest,
): Promise<{ body: A } | undefined> {
	const response = await send(context, request);
	if (ok(response)) return { body: response.body as A };
	const body = (response.body ?? {}) as ApiErrorBody;
	if (response.statusCode === 404 && body.error?.code === 'NOT_FOUND') return undefined;
	throw parleyApiError(context.getNode(), response, request.itemIndex);
}

/**
 * Reads a paged endpoint, following `nextCursor` until the end or until
 * `limit` items are collected.
 */
export async function parleyPages<A>(
	context: ParleyContext,
	request: ParleyRequest,
	limit: number | undefined,
): Promise<A[]> {
	const items: A[] = [];
	let cursor: string | null = null;
	do {
		const qs: IDataObject = { ...(request.qs ?? {}) };
		if (cursor !== null) qs.cursor = cursor;
		const page = await parleyRequest<Page<A>>(context, { ...request, qs });
		items.push(...page.items);
		cursor = page.nextCursor;
	} while (cursor !== null && (limit === undefined || items.length < limit));
	return limit === undefined ? items : items.slice(0, limit);
}
