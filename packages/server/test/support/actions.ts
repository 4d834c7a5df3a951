/** A stored text for the store tests: sent by key `key_1` from PN1 on the given line, delivered, read. */
import { ActionStore } from "@parley/core/domain"

/** The time of the `i`-th stored action: a second apart from 2026-01-01 on. */
export const storedAt = (i: number): string => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString()

export const storedText = (
  orgId: string,
  i: number,
  overrides: Partial<ActionStore.NewAction> = {}
): ActionStore.NewAction => {
  const at = storedAt(i)
  return {
    orgId,
    kind: "message",
    type: "SMS",
    direction: "Outbound",
    status: "Delivered",
    line: "+14155550100",
    counterpart: `+1503555${String(1000 + i)}`,
    fromNumberSid: "PN1",
    body: `Message ${i}`,
    mediaUrls: [],
    ...ActionStore.NO_SENDING_DETAILS,
    read: at,
    at,
    scheduledFor: null,
    dueAt: Date.parse(at),
    owner: null,
    record: null,
    linkedRecords: [],
    sid: null,
    audioFileId: null,
    errorMessage: null,
    sentBy: "API key key_1",
    modified: at,
    apiKeyId: "key_1",
    ...overrides
  }
}
