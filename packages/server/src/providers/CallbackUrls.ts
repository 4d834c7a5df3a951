/**
 * The URLs providers call back on, under the server's public base URL
 * (`PARLEY_PUBLIC_URL`; without it, the server's own loopback address, which
 * only a provider on the same machine — a local fake — can reach). The same
 * base checks the signatures providers compute over these URLs, so that they
 * verify behind a proxy too.
 */
import { Option } from "effect"
import type { ServerSettings } from "../config/ServerConfig.js"

/** Where this machine reaches the server: loopback, unless HOST binds one other address only. */
const ownAddress = (config: ServerSettings): string => {
  const host = Option.getOrElse(config.host, () => "0.0.0.0")
  if (host === "0.0.0.0" || host === "::") return `127.0.0.1:${config.port}`
  return `${host.includes(":") ? `[${host}]` : host}:${config.port}`
}

export const publicBase = (config: ServerSettings): string =>
  Option.match(config.publicUrl, {
    onNone: () => `http://${ownAddress(config)}`,
    onSome: (base) => base.replace(/\/+$/, "")
  })

/** The URL a request was made to, as the provider that signed it saw it. */
export const requestUrl = (config: ServerSettings, host: string | undefined, pathAndQuery: string): string =>
  Option.match(config.publicUrl, {
    onNone: () => `http://${host ?? ownAddress(config)}${pathAndQuery}`,
    onSome: (base) => base.replace(/\/+$/, "") + pathAndQuery
  })
