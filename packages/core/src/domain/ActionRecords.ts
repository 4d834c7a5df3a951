/** How a stored CRM action reads on the wire: the contract's ActionRecord. */
import { ActionRecord } from "../contract/Resources.js"
import type { CrmAction } from "../ports/Crm.js"

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
    owner: action.owner,
    record: action.record === null ? null : { id: action.record.id, name: action.record.name },
    linkedRecords: action.linkedRecords,
    sid: action.sid,
    audioFileId: action.audioFileId,
    errorMessage: action.errorMessage,
    ...(action.sentBy === null ? {} : { sentBy: action.sentBy }),
    modified: action.modified
  })
}
