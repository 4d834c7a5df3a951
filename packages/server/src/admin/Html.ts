/**
 * HTML built from templates whose interpolations are escaped unless they are already Html: a value from the
 * database or a form can never become markup. No inline script or style attribute is ever written (the
 * Content-Security-Policy forbids them), so a page is markup, the stylesheet and one small script file.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

export const escape = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)

export type Interpolation = Html | string | number | null | undefined | false | ReadonlyArray<Interpolation>

const render = (value: Interpolation): string => {
  if (value === null || value === undefined || value === false) return ""
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return value.map(render).join("")
  return escape(String(value))
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolation>): Html => {
  let text = strings[0] ?? ""
  for (let i = 0; i < values.length; i++) text += render(values[i]) + (strings[i + 1] ?? "")
  return new Html(text)
}

/** An attribute present or absent (`checked`, `disabled`). */
export const flag = (name: string, on: boolean): Html => new Html(on ? ` ${name}` : "")
