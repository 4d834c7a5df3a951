/**
 * Driving the admin console over plain HTTP (no browser): set a password from a sign-in link, sign in,
 * read a page's CSRF token, post a form with a session. For the console's security tests and the bench.
 */
export interface ConsoleSession {
  readonly cookie: string
  readonly csrf: string
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

const FORM = { "content-type": "application/x-www-form-urlencoded" }

/** Uses the link `parley admins create` printed to set the password. */
export const setPasswordFromLink = async (baseUrl: string, link: string, password: string): Promise<void> => {
  const token = new URL(link).searchParams.get("token") ?? ""
  const response = await fetch(`${baseUrl}/admin/set-password`, {
    method: "POST",
    headers: FORM,
    body: form({ token, password }),
    redirect: "manual"
  })
  if (response.status !== 303) throw new Error(`setting the password answered ${response.status}`)
}

export const postSignIn = (baseUrl: string, email: string, password: string) =>
  fetch(`${baseUrl}/admin/sign-in`, { method: "POST", headers: FORM, body: form({ email, password }), redirect: "manual" })

export const csrfOf = (html: string): string => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""

export const signIn = async (baseUrl: string, email: string, password: string): Promise<ConsoleSession> => {
  const response = await postSignIn(baseUrl, email, password)
  const cookie = (response.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  if (response.status !== 303 || cookie === "") throw new Error(`sign-in answered ${response.status}`)
  const page = await fetch(`${baseUrl}/admin/keys`, { headers: { cookie } })
  return { cookie, csrf: csrfOf(await page.text()) }
}

export const consoleGet = (baseUrl: string, session: ConsoleSession, path: string) =>
  fetch(`${baseUrl}${path}`, { headers: { cookie: session.cookie }, redirect: "manual" })

export const consolePost = (baseUrl: string, session: ConsoleSession | null, path: string, fields: Record<string, string>) =>
  fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { ...FORM, ...(session === null ? {} : { cookie: session.cookie }) },
    body: form(fields),
    redirect: "manual"
  })

/**
 * A new administrator of `orgId` with `password`, as set-up (not the CLI under test): `parley admins create`
 * in the test process, then the password set from the one-time link it prints, as the invitee would.
 */
export const addAdmin = async (
  server: { readonly baseUrl: string; adminJson<A>(args: ReadonlyArray<string>): Promise<A> },
  orgId: string,
  email: string,
  password: string,
  role?: "owner" | "admin" | "viewer"
): Promise<void> => {
  const invited = await server.adminJson<{ link: string }>(["admins", "create", orgId, "--email", email, ...(role === undefined ? [] : ["--role", role])])
  await setPasswordFromLink(server.baseUrl, invited.link, password)
}
