/**
 * WhatsApp's 24-hour customer-service session: free-form text may be sent
 * only within 24 hours of the recipient's last inbound WhatsApp message to the
 * line; outside it, an approved content template (`whatsAppContentSid`) is
 * required. Twilio content SIDs are `HX` + 32 hex characters.
 */
export const SESSION_MS = 24 * 60 * 60 * 1000

export const CONTENT_SID = /^HX[0-9a-fA-F]{32}$/

export const isSessionOpen = (lastInboundAt: string | null, now: number): boolean =>
  lastInboundAt !== null && now - Date.parse(lastInboundAt) < SESSION_MS

/** Renders `{{1}}` or `{{first_name}}` variables into a content template's text (the simulated carrier's preview). */
export const renderContentVariables = (text: string, variables: Readonly<Record<string, string>>): string =>
  text.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => variables[`{{${name}}}`] ?? whole)
