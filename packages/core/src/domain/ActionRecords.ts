/** How a stored CRM action reads on the wire: the contract's ActionRecord. */
import { ActionRecord } from "../contract/Resources.js"
import type { CrmModule } from "../contract/Primitives.js"
import { type Action, publicId } from "../ports/ActionStore.js"

/**
 * Whether an account that may read `readable` modules may see a record of `module` (the CRM would not show
 * it the others). `readable` undefined means every module: events and the admin CLI.
 */
export const mayRead = (readable: ReadonlyArray<CrmModule> | undefined, module: string): boolean =>
  readable === undefined || readable.some((m) => m === module)

/**
 * Built without re-validating: every ActionRecord field is a plain string, a literal or a struct of
 * those (no refinement), and a Action already carries exactly those types, decoded where it was
 * read from storage or request input. Validation here only repeated what the types prove, and it
 * was the largest cost of an event, which the dispatcher writes thousands of a second (figures in
 * docs/benchmarks.md, "Measurements moved out of code comments"). The
 * nested values are copied field by field, as a validating make would, so that a value with more
 * properties than its type (a stored linked record, say) writes no extra key into a payload.
 */
export const toActionRecord = (action: Action, readable?: ReadonlyArray<CrmModule>): ActionRecord => {
  const outbound = action.direction === "Outbound"
  // A record in a module the account may not read is not linked as far as this reader can tell.
  const record = action.record === null || !mayRead(readable, action.record.module) ? null : action.record
  const linkedName = (module: CrmModule) =>
    mayRead(readable, module) ? (action.linkedRecords.find((r) => r.module === module)?.name ?? null) : null
  return ActionRecord.make({
    id: publicId(action),
    name: record?.name ?? null,
    senderName: outbound ? (action.owner?.name ?? null) : (record?.name ?? null),
    linkedSenders: {
      Contact: linkedName("Contacts"),
      Account: linkedName("Deals"),
      Vendor: linkedName("Vendors"),
      Lead: linkedName("Leads")
    },
    from: outbound ? action.line : action.counterpart,
    to: outbound ? action.counterpart : action.line,
    direction: action.direction,
    body: action.body,
    mediaUrls: action.mediaUrls,
    status: action.status,
    type: action.type,
    botId: action.botId,
    read: action.read,
    at: action.at,
    scheduledFor: action.scheduledFor,
    owner: action.owner === null ? null : { id: action.owner.id, name: action.owner.name },
    record: record === null ? null : { id: record.id, name: record.name },
    linkedRecords: action.linkedRecords.length === 0
      ? []
      : action.linkedRecords.map((r) => ({ module: r.module, id: r.id, name: mayRead(readable, r.module) ? r.name : null })),
    sid: action.sid,
    audioFileId: action.audioFileId,
    errorMessage: action.errorMessage,
    ...(action.sentBy === null ? {} : { sentBy: action.sentBy }),
    modified: action.modified
  }, { disableValidation: true })
}

