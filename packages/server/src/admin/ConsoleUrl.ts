/** Where the console is reached from outside: PARLEY_PUBLIC_URL when set, else this machine's port. */
import type { ServerSettings } from "../config/ServerConfig.js"
import { Option } from "effect"

export const consoleBaseUrl = (config: ServerSettings): string =>
  Option.getOrElse(Option.map(config.publicUrl, (url) => url.replace(/\/+$/, "")), () => `http://localhost:${config.port}`)

/** Cookies are marked Secure when the public URL is https (behind a TLS proxy); plain http would drop them. */
export const isHttps = (config: ServerSettings): boolean =>
  Option.match(config.publicUrl, { onNone: () => false, onSome: (url) => url.toLowerCase().startsWith("https://") })
