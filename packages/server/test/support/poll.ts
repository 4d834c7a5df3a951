/** Polling helpers for asynchronous outcomes: wait for a condition, with a deadline, never a fixed sleep. */
export const until = async <A>(
  probe: () => Promise<A | undefined>,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number; readonly what?: string } = {}
): Promise<A> => {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000)
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50))
  }
  throw new Error(`timed out waiting for ${options.what ?? "a condition"}${last === undefined ? "" : `: ${String(last)}`}`)
}
