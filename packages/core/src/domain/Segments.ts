/**
 * How many SMS segments a text costs, as carriers bill it (3GPP TS 23.038 and
 * 23.040): a text entirely in the GSM-7 alphabet fits 160 characters in one
 * segment and 153 in each part of a longer one (the rest holds the
 * concatenation header); a character of the extension table (`€ [ ] { } ~ ^ \ |`
 * and form feed) takes two. Any other character makes the whole text UCS-2:
 * 70 UTF-16 units in one segment, 67 in each part. Allowances count segments,
 * so a 1,600-character text is ten units, not one: SMS pumping is paid by the
 * segment, and so is the operator's bill.
 *
 * WhatsApp is billed per message, not per segment: one unit whatever its length.
 */
import type { RecordType } from "../contract/Statuses.js"

const GSM7_BASIC = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
const GSM7_EXTENSION = "\f^{}\\[~]|€"
const BASIC: ReadonlySet<string> = new Set(GSM7_BASIC)
const EXTENSION: ReadonlySet<string> = new Set(GSM7_EXTENSION)

/** GSM-7 septets the text needs, or null when a character is outside GSM-7 (the text goes as UCS-2). */
const gsm7Length = (text: string): number | null => {
  let septets = 0
  for (const char of text) {
    if (BASIC.has(char)) septets += 1
    else if (EXTENSION.has(char)) septets += 2
    else return null
  }
  return septets
}

/** Segments of an SMS body (an empty body is still one message). */
export const smsSegments = (text: string): number => {
  const septets = gsm7Length(text)
  if (septets !== null) return septets <= 160 ? 1 : Math.ceil(septets / 153)
  const units = text.length // UTF-16 code units, as UCS-2 carries them
  return units <= 70 ? 1 : Math.ceil(units / 67)
}

/** Units of a text allowance an outbound text takes. */
export const allowanceUnits = (type: RecordType, body: string): number => (type === "SMS" ? smsSegments(body) : 1)
