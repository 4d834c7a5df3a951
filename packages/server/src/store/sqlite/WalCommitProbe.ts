/**
 * Whether anything may have been committed to a WAL-mode SQLite database
 * since the last look — by this process or any other — for the price of one
 * 96-byte `pread`, where a statement costs a read transaction (two `fcntl`
 * locks on the shared-memory file, and more right after a write).
 *
 * Every connection to the database shares the WAL index (the `-shm` file).
 * Its header is rewritten by every commit and every WAL reset (its change
 * counter, frame count, salts and checksum; https://sqlite.org/walformat.html,
 * "The WAL-Index Header"), in two copies written second-then-first, which
 * readers compare to detect a write in progress. An unchanged, consistent
 * header therefore means no commit since; anything else (a changed or torn
 * header, a missing file, a read error) answers "maybe", and the caller reads
 * the database. Changes of the caller's own open transaction are not
 * committed, so do not show here: the caller checks inside a transaction
 * itself.
 */
import { closeSync, openSync, readSync } from "node:fs"

const HEADER_BYTES = 48

export interface WalCommitProbe {
  /**
   * Null when nothing has been committed since the last accepted look; otherwise a function that accepts
   * this look: call it once what the caller keeps has been read again (a read that fails leaves the look
   * unaccepted, and the next one says "maybe" again).
   */
  readonly changes: () => (() => void) | null
  /** The same question without accepting anything. */
  readonly peek: () => boolean
  readonly close: () => void
}

const nothing = () => {}
const always: WalCommitProbe = { changes: () => nothing, peek: () => true, close: () => {} }

export const open = (databaseFile: string): WalCommitProbe => {
  let fd: number
  try {
    fd = openSync(`${databaseFile}-shm`, "r")
  } catch {
    return always
  }
  const both = Buffer.alloc(2 * HEADER_BYTES)
  const first = both.subarray(0, HEADER_BYTES)
  const second = both.subarray(HEADER_BYTES)
  const last = Buffer.alloc(HEADER_BYTES)
  let known = false
  /** Reads the header: "same" as last seen, "new" (consistent, another), or "unknown" (torn, unreadable). */
  const look = (): "same" | "new" | "unknown" => {
    try {
      if (readSync(fd, both, 0, both.length, 0) !== both.length) return "unknown"
    } catch {
      return "unknown"
    }
    if (!first.equals(second)) return "unknown"
    return known && first.equals(last) ? "same" : "new"
  }
  const changes = (): (() => void) | null => {
    const seen = look()
    if (seen === "same") return null
    // A torn header (a write in progress) is not remembered: the next look reads it again.
    if (seen === "unknown") return nothing
    const header = Buffer.from(first)
    return () => {
      header.copy(last)
      known = true
    }
  }
  return {
    changes,
    peek: () => look() !== "same",
    close: () => closeSync(fd)
  }
}
