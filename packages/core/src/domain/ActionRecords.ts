/** How a stored CRM action reads on the wire: the contract's ActionRecord. */
import { ActionRecord } from "../contract/Resources.js"
import type { CrmAction } from "../ports/Crm.js"

/**
 * Built without re-validating: every ActionRecord field is a plain string, a literal or a struct of
 * those (no refinement), and a CrmAction already carries exactly those types, decoded where it was
 * read from storage or request input. Validation here only repeated what the types prove, and it
 * was the largest cost of an event (~35 µs of ~50; the dispatcher writes thousands a second). The
 * nested values are copied field by field, as a validating make would, so that a value with more
 * properties than its type (a stored linked record, say) writes no extra key into a payload.
 */
export const toActionRecord = (action: CrmAction): ActionRecord => {
  const outbound = action.direction === "Outbound"
  return ActionRecord.make({
    id: action.id,
    name: action.record?.name ?? null,
    senderName: outbound ? (action.owner?.name ?? null) : (action.record?.name ?? null),
    linkedSenders: {
      Contact: action.linkedRecords.find((r) => r.module === "Contacts")?.name ?? null,
      Account: action.linkedRecords.find((r) => r.module === "Deals")?.name ?? null,
      Vendor: action.linkedRecords.find((r) => r.module === "Vendors")?.name ?? null,
      Lead: action.linkedRecords.find((r) => r.module === "Leads")?.name ?? null
    },
    from: outbound ? action.line : action.counterpart,
    to: outbound ? action.counterpart : action.line,
    direction: action.direction,
    body: action.body,
    status: action.status,
    type: action.type,
    botId: action.botId,
    read: action.read,
    at: action.at,
    scheduledFor: action.scheduledFor,
    owner: action.owner === null ? null : { id: action.owner.id, name: action.owner.name },
    record: action.record === null ? null : { id: action.record.id, name: action.record.name },
    linkedRecords: action.linkedRecords.length === 0
      ? []
      : action.linkedRecords.map((r) => ({ module: r.module, id: r.id, name: r.name })),
    sid: action.sid,
    audioFileId: action.audioFileId,
    errorMessage: action.errorMessage,
    ...(action.sentBy === null ? {} : { sentBy: action.sentBy }),
    modified: action.modified
  }, { disableValidation: true })
}
