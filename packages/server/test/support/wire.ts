/**
 * What the black-box suites check on every answer, in one place: the status,
 * the JSON body, the spec's error shape (`{error: {code, message, requestId}}`
 * with `requestId` equal to `X-Request-ID`), and waiting for a record to reach
 * a state, with a deadline.
 */
import { expect } from "vitest"

export interface ErrorDetail {
  readonly code: string
  readonly message: string
  readonly requestId: string
}

/** The body of an answer that must have this status (the body is shown when it has not). */
export const readJson = async <A>(response: Response, status: number): Promise<A> => {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return JSON.parse(text) as A
}

/** An answer in the spec's error shape, with this status and code. */
export const expectError = async (response: Response, status: number, code: string): Promise<ErrorDetail> => {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  const body = JSON.parse(text) as { readonly error: ErrorDetail }
  expect(Object.keys(body)).toEqual(["error"])
  expect(body.error.code, text).toBe(code)
  expect(body.error.message.length).toBeGreaterThan(0)
  expect(body.error.requestId).toBe(response.headers.get("x-request-id"))
  return body.error
}

/**
 * Reads until `done` holds or the deadline passes, and answers the last reading either way: the caller's
 * assertion on it then says what state was reached instead.
 */
export const readUntil = async <A>(read: () => Promise<A>, done: (a: A) => boolean, timeoutMs = 30_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let last = await read()
  while (!done(last) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    last = await read()
  }
  return last
}
