/**
 * The client's address behind reverse proxies: the socket's peer, unless that peer is one of
 * PARLEY_TRUSTED_PROXIES; then the proxies' `X-Forwarded-For` (or, without it, `Forwarded: for=`) is read
 * from the right, past every trusted proxy, and the first address that is not one is the client. A header
 * from a peer that is not a trusted proxy is ignored: anyone can send one.
 */
import { BlockList, isIP } from "node:net"

export interface TrustedProxies {
  readonly list: BlockList
  readonly text: string
}

const family = (address: string): "ipv4" | "ipv6" | null =>
  isIP(address) === 4 ? "ipv4" : isIP(address) === 6 ? "ipv6" : null

/** `10.0.0.0/8, 192.168.1.7, ::1/128` → the list; a message naming the bad entry otherwise. */
export const parseTrustedProxies = (text: string): TrustedProxies | string => {
  const list = new BlockList()
  for (const entry of text.split(",").map((part) => part.trim()).filter((part) => part !== "")) {
    const [network = "", prefix] = entry.split("/")
    const type = family(network)
    const bits = prefix === undefined ? (type === "ipv4" ? 32 : 128) : Number(prefix)
    if (type === null || !Number.isInteger(bits) || bits < 0 || bits > (type === "ipv4" ? 32 : 128)) {
      return `"${entry}" is not an IP address or a CIDR (such as 10.0.0.0/8)`
    }
    list.addSubnet(network, bits, type)
  }
  return { list, text }
}

const unmapped = (address: string) => address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address

const trusted = (proxies: TrustedProxies, address: string): boolean => {
  const plain = unmapped(address)
  const type = family(plain)
  return type !== null && proxies.list.check(plain, type)
}

/** `for=` values of a Forwarded header, in order (quotes, brackets and ports taken off). */
const forwardedFor = (header: string): Array<string> =>
  header.split(",").flatMap((element) =>
    element.split(";").map((pair) => pair.trim()).filter((pair) => pair.toLowerCase().startsWith("for=")).map((pair) => {
      const value = pair.slice(4).replace(/^"|"$/g, "")
      const bracketed = /^\[([^\]]+)\]/.exec(value)
      if (bracketed !== null) return bracketed[1] ?? ""
      return value.includes(".") ? value.replace(/:\d+$/, "") : value
    })
  )

export const clientAddress = (
  proxies: TrustedProxies,
  peer: string,
  headers: Readonly<Record<string, string | undefined>>
): string => {
  if (!trusted(proxies, peer)) return unmapped(peer)
  const xff = headers["x-forwarded-for"]
  const forwarded = headers["forwarded"]
  const chain = xff !== undefined
    ? xff.split(",").map((part) => part.trim())
    : forwarded !== undefined
    ? forwardedFor(forwarded)
    : []
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = unmapped(chain[i] ?? "")
    if (family(hop) === null) return unmapped(peer) // a hop that is not an address: trust nothing before it
    if (!trusted(proxies, hop)) return hop
  }
  return chain.length > 0 ? unmapped(chain[0] ?? peer) : unmapped(peer)
}
