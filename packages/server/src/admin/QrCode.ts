/**
 * A QR code as inline SVG, drawn on the server: the console loads no outside script and no image from
 * elsewhere (its Content-Security-Policy), and an `otpauth://` address must not leave the page. The SVG has
 * no script and no style attribute (only presentation attributes), so the policy allows it inline.
 */
import QRCode from "qrcode"
import { Effect } from "effect"
import { Html, escape } from "./Html.js"

/** `label` is what a screen reader says for the picture. */
export const qrSvg = (text: string, label: string): Effect.Effect<Html> =>
  Effect.map(
    Effect.promise(() => QRCode.toString(text, { type: "svg", errorCorrectionLevel: "M", margin: 4, width: 220 })),
    (svg) => new Html(svg.replace(/^<svg /, `<svg role="img" aria-label="${escape(label)}" focusable="false" `))
  )
