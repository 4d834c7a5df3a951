/** What the console answers for anything that is not the administrator's organisation's: 404, like nothing there. */
import type { Session } from "../AdminStore.js"
import { page } from "../ConsoleHttp.js"
import { html } from "../Html.js"
import { layout } from "../Layout.js"

export const notFoundPage = (session: Session | null, message: string) =>
  page(
    layout({ title: "Not found", session, body: html`<p>${message}</p><p><a href="/admin/keys">Back to the console</a></p>` }),
    { status: 404 }
  )
