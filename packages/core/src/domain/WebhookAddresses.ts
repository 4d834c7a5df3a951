/**
 * Which network addresses event deliveries may reach (server-side request
 * forgery). A webhook URL is chosen by an API key holder, and Parley posts to
 * it from inside the operator's network, so the address it connects to is
 * what matters — not the text of the URL: `[::ffff:169.254.169.254]`,
 * `[::169.254.169.254]`, a name such as `169.254.169.254.nip.io` or a name
 * whose DNS answer changes between checks all reach the same metadata service.
 * So addresses are classified after parsing (ipaddr.js, which unwraps
 * IPv4-mapped and IPv4-compatible IPv6), and the server decides on every
 * address a name resolves to, at the moment it connects.
 *
 * - never: link-local (169.254.0.0/16, fe80::/10: cloud metadata services),
 *   the known metadata addresses elsewhere, cloud platforms' internal hosts
 *   (PLATFORM_ADDRESSES), unspecified, multicast and
 *   broadcast — nothing that receives webhooks lives there;
 * - private: loopback, private networks, carrier-grade NAT, unique-local,
 *   reserved and translation ranges — refused unless the operator lists the
 *   network (PARLEY_WEBHOOK_ALLOWED_NETWORKS), as a self-hosted n8n beside
 *   Parley needs;
 * - public: everything else.
 */
import { Either } from "effect"
import ipaddr from "ipaddr.js"

export type AddressClass = "public" | "private" | "never"

type Address = ipaddr.IPv4 | ipaddr.IPv6

/** Metadata services that do not answer on a link-local address (Alibaba Cloud, AWS over IPv6). */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set(["100.100.100.200", "fd00:ec2::254"])

/** Metadata services' names, refused however they resolve (they resolve only inside the cloud). */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal"
])

/**
 * Cloud platforms' own hosts on addresses that look public or reserved, reachable from inside their clouds
 * only and answering there for the platform (kept beside link-local, and refused the same way): Azure's
 * WireServer (168.63.129.16: DNS, DHCP, health probes, the VM agent's configuration and extensions, with
 * secrets) and Oracle Cloud's legacy metadata service (192.0.0.192).
 */
const PLATFORM_ADDRESSES: ReadonlySet<string> = new Set(["168.63.129.16", "192.0.0.192"])

const isPlatformAddress = (address: Address): boolean => PLATFORM_ADDRESSES.has(address.toString())

const NEVER_RANGES: ReadonlySet<string> = new Set(["linkLocal", "unspecified", "multicast", "broadcast"])

const parse = (text: string): Address | null => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  // Zone ids (fe80::1%eth0) name an interface, not an address: classify the address.
  const address = bare.split("%")[0] ?? bare
  if (!ipaddr.isValid(address)) return null
  // process(): `::ffff:a.b.c.d` and `::a.b.c.d` become the IPv4 address they carry.
  return ipaddr.process(address)
}

export const isIpLiteral = (host: string): boolean => parse(host) !== null

/**
 * The IPv4 address an IPv6 one carries where translation or tunnelling can deliver to it: IPv4-compatible
 * (`::a.b.c.d`, which ipaddr.js calls unicast when written in hex), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
const embeddedIpv4 = (address: ipaddr.IPv6): ipaddr.IPv4 | null => {
  const bytes = address.toByteArray()
  const v4 = (offset: number) => new ipaddr.IPv4(bytes.slice(offset, offset + 4))
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0)
  if (zeros(0, 12)) return zeros(12, 16) || (zeros(12, 15) && bytes[15] === 1) ? null : v4(12)
  if (address.range() === "rfc6052") return v4(12)
  if (address.range() === "6to4") return v4(2)
  return null
}

const classifyParsed = (address: Address): AddressClass => {
  if (METADATA_ADDRESSES.has(address.toNormalizedString()) || METADATA_ADDRESSES.has(address.toString())) {
    return "never"
  }
  if (isPlatformAddress(address)) return "never"
  const range = address.range()
  if (NEVER_RANGES.has(range)) return "never"
  if (address.kind() === "ipv6") {
    const carried = address instanceof ipaddr.IPv6 ? embeddedIpv4(address) : null
    if (carried !== null) return classifyParsed(carried) === "never" ? "never" : "private"
  }
  return range === "unicast" ? "public" : "private"
}

/** The class of an address (IPv4 or IPv6, bracketed or not); null when it is not an address. */
export const classify = (text: string): AddressClass | null => {
  const address = parse(text)
  return address === null ? null : classifyParsed(address)
}

/** The range's name for messages (`loopback`, `private`, `linkLocal`…). */
export const rangeOf = (text: string): string => parse(text)?.range() ?? "unknown"

/** A metadata service's host name (case and a trailing dot ignored). */
export const isMetadataName = (host: string): boolean => METADATA_NAMES.has(host.toLowerCase().replace(/\.$/, ""))

export interface AllowedNetworks {
  readonly cidrs: ReadonlyArray<readonly [Address, number]>
  readonly text: string
}

export const NO_NETWORKS: AllowedNetworks = { cidrs: [], text: "" }

/** Parses the operator's allow-list: comma-separated CIDRs (`127.0.0.0/8,10.0.0.0/8,::1/128`). */
export const parseAllowedNetworks = (text: string): Either.Either<AllowedNetworks, string> => {
  const cidrs: Array<readonly [Address, number]> = []
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    try {
      cidrs.push(ipaddr.parseCIDR(part))
    } catch {
      return Either.left(`${part} is not a network in CIDR form, such as 10.0.0.0/8 or fd00::/8`)
    }
  }
  return Either.right({ cidrs, text: text.trim() })
}

const within = (address: Address, [network, bits]: readonly [Address, number]): boolean =>
  address.kind() === network.kind() && address.match(network, bits)

/**
 * Why deliveries may not connect to this address, or nothing when they may. An address the operator listed
 * is allowed unless it is in a `never` range.
 */
export const refusal = (allowed: AllowedNetworks, text: string): string | null => {
  const address = parse(text)
  if (address === null) return `${text} is not an IP address`
  const kind = classifyParsed(address)
  if (kind === "public") return null
  if (kind === "private" && allowed.cidrs.some((cidr) => within(address, cidr))) return null
  const carried = address instanceof ipaddr.IPv6 ? embeddedIpv4(address) : null
  const shown = carried === null ? address.toString() : `${address.toString()} (carrying ${carried.toString()})`
  const range = (carried ?? address).range()
  if (isPlatformAddress(carried ?? address)) return `${shown} is a cloud platform's internal host, never a webhook receiver`
  return kind === "never"
    ? `${shown} is a ${range} address (cloud metadata services answer there), never a webhook receiver`
    : `${shown} is a ${range} address, which PARLEY_WEBHOOK_ALLOWED_NETWORKS does not list`
}
