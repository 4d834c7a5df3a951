/**
 * What a key and the executing CRM account may read: the lines of the key's
 * numbers and the AI calls of the key's bots (its restrictions), for accounts
 * that see only their own, the actions they own, and the names of records only
 * in modules the account may read. One rule for single records, lists,
 * conversation pages and cancellation.
 */
import { Effect } from "effect"
import { CrmPermissionDenied } from "../contract/Errors.js"
import type { Action } from "../ports/ActionStore.js"
import type { StorageError } from "../ports/StorageError.js"
import type { CallerInfo } from "./Caller.js"
import type { DirectoryService } from "./Directory.js"

export interface Visibility {
  /** Only actions on these lines; null for every line. */
  readonly lines: ReadonlyArray<string> | null
  /** Only actions owned by this account; null for all. */
  readonly ownerId: string | null
  /** Only AI calls of these bots (texts have no bot); null for every bot. */
  readonly bots: ReadonlyArray<string> | null
}

export const visibility = (
  caller: CallerInfo,
  directory: DirectoryService
): Effect.Effect<Visibility, CrmPermissionDenied | StorageError> => {
  const view = caller.account.permissions.actionsView
  if (view === "none") {
    return Effect.fail(
      new CrmPermissionDenied({
        message: `The connected CRM account (${caller.account.name}) may not read messages or calls.`
      })
    )
  }
  const ownerId = view === "own" ? caller.account.id : null
  const bots = caller.botIds.length === 0 ? null : caller.botIds
  // Every read of an action runs this: no step at all unless the key is restricted to some numbers.
  return caller.numberSids.length === 0
    ? Effect.succeed({ lines: null, ownerId, bots })
    : Effect.map(directory.permittedNumbers(caller), (numbers) => ({ lines: numbers.map((n) => n.phoneNumber), ownerId, bots }))
}

export const isVisible = (action: Action, seen: Visibility): boolean =>
  (seen.lines === null || seen.lines.includes(action.line)) &&
  (seen.ownerId === null || action.owner?.id === seen.ownerId) &&
  (seen.bots === null || action.kind !== "ai_call" || (action.botId !== null && seen.bots.includes(action.botId)))
