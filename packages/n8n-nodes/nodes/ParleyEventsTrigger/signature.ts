/**
 * Checks a delivery's Standard Webhooks v1 signature, as Parley signs them:
 * `webhook-signature` holds one or more space-separated `v1,<base64
 * HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, keyed with
 * the base64 bytes after the secret's `whsec_` prefix (two signatures while a
 * secret is being rotated). A timestamp more than five minutes away from now
 * is refused, so a captured delivery cannot be replayed later.
 *
 * Written with Node's crypto only: community nodes may have no runtime
 * dependencies, so the `standardwebhooks` package cannot be used here (the
 * tests check this code against it).
 */
import { createHmac, timingSafeEqual } from 'crypto';

/** How far a delivery's timestamp may be from now, in seconds (the standard's five minutes). */
export const TOLERANCE_SECONDS = 5 * 60;

const SECRET_PREFIX = 'whsec_';

export interface SignedDelivery {
	/** `webhook-id`: the event id, the same on every retry. */
	id: string | undefined;
	/** `webhook-timestamp`: seconds since the epoch when the attempt was signed. */
	timestamp: string | undefined;
	/** `webhook-signature`. */
	signature: string | undefined;
	/** The body exactly as received. */
	body: Buffer;
}

/** Why a delivery was refused, or undefined when it is genuine. */
export function signatureProblem(
	secret: string,
	delivery: SignedDelivery,
	nowSeconds: number,
): string | undefined {
	const { id, timestamp, signature, body } = delivery;
	if (!id || !timestamp || !signature) {
		return 'The webhook-id, webhook-timestamp and webhook-signature headers are required';
	}
	if (!/^\d{1,15}$/.test(timestamp)) return 'The webhook-timestamp header is not a number of seconds';
	const age = nowSeconds - Number(timestamp);
	if (age > TOLERANCE_SECONDS) return 'The webhook-timestamp is more than 5 minutes old';
	if (age < -TOLERANCE_SECONDS) return 'The webhook-timestamp is more than 5 minutes in the future';

	const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
	const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
	const matches = signature.split(' ').some((entry) => {
		const [version, value] = entry.split(',', 2);
		if (version !== 'v1' || value === undefined) return false;
		const given = Buffer.from(value, 'base64');
		return given.length === expected.length && timingSafeEqual(given, expected);
	});
	return matches ? undefined : 'No signature in the webhook-signature header matches this endpoint\'s secret';
}
