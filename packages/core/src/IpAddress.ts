/**
 * What kind of network an IP address belongs to, so that outbound webhooks reach only the public
 * internet (docs/webhooks.md#only-the-public-internet): loopback, private, link-local, shared
 * (CGNAT), multicast, unspecified and other reserved addresses are refused. Pure text parsing, no
 * DNS: resolving names is the caller's.
 */
import { Option } from "effect"

/** The range an address falls in; only `public` may receive webhooks. */
export type Range =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link-local"
  | "shared"
  | "multicast"
  | "reserved"

type V4 = readonly [number, number, number, number]

const v4Pattern = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/

/** A dotted-quad IPv4 address (the form a URL's host is normalised to), or None. */
const parseV4 = (text: string): Option.Option<V4> => {
  const m = v4Pattern.exec(text)
  if (m === null) return Option.none()
  const parts = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])] as const
  return parts.every((p) => p <= 255) ? Option.some(parts) : Option.none()
}

/** The eight 16-bit groups of an IPv6 address (with an optional dotted IPv4 tail), or None. */
const parseV6 = (text: string): Option.Option<ReadonlyArray<number>> => {
  let rest = text.includes("%") ? text.slice(0, text.indexOf("%")) : text // a zone (`%eth0`) names no host
  const tail: Array<number> = []
  const lastColon = rest.lastIndexOf(":")
  const last = rest.slice(lastColon + 1)
  if (last.includes(".")) {
    const v4 = parseV4(last)
    if (Option.isNone(v4)) return Option.none()
    const [a, b, c, d] = v4.value
    tail.push((a << 8) | b, (c << 8) | d)
    // Keep a `::` that stood just before the IPv4 part (`::1.2.3.4`, `::ffff:1.2.3.4` keeps `::ffff`).
    rest = rest[lastColon - 1] === ":" ? rest.slice(0, lastColon + 1) : rest.slice(0, lastColon)
  }
  const halves = rest.split("::")
  if (halves.length > 2) return Option.none()
  const groupsOf = (part: string) => (part === "" ? [] : part.split(":"))
  const head = groupsOf(halves[0]!)
  const back = halves.length === 2 ? groupsOf(halves[1]!) : []
  const want = 8 - tail.length
  if (halves.length === 1 ? head.length !== want : head.length + back.length > want - 1) return Option.none()
  const zeros = Array<string>(halves.length === 2 ? want - head.length - back.length : 0).fill("0")
  const words: Array<number> = []
  for (const group of [...head, ...zeros, ...back]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return Option.none()
    words.push(parseInt(group, 16))
  }
  return Option.some([...words, ...tail])
}

const inV4 = ([a, b]: V4, prefix: readonly [number, number], bits: number): boolean => {
  const value = (a << 8) | b
  const base = (prefix[0] << 8) | prefix[1]
  const mask = bits === 0 ? 0 : (0xffff << (16 - bits)) & 0xffff
  return (value & mask) === (base & mask)
}

const classifyV4 = (ip: V4): Range => {
  const [a, b, c] = ip
  if (a === 0) return ip.every((p) => p === 0) ? "unspecified" : "reserved" // 0.0.0.0/8: "this network"
  if (a === 127) return "loopback"
  if (a === 10 || inV4(ip, [172, 16], 12) || inV4(ip, [192, 168], 16)) return "private"
  if (inV4(ip, [169, 254], 16)) return "link-local"
  if (inV4(ip, [100, 64], 10)) return "shared" // carrier-grade NAT
  if (a >= 224 && a <= 239) return "multicast"
  if (a >= 240) return "reserved" // 240/4 and the broadcast address
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return "reserved" // protocol assignments, documentation
  if (inV4(ip, [198, 18], 15)) return "reserved" // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return "reserved" // documentation
  return "public"
}

const v4Of = (hi: number, lo: number): V4 => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]

const classifyV6 = (w: ReadonlyArray<number>): Range => {
  const zeroUpTo = (n: number) => w.slice(0, n).every((x) => x === 0)
  if (zeroUpTo(8)) return "unspecified"
  if (zeroUpTo(7) && w[7] === 1) return "loopback"
  // An IPv4 address carried in IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64
  // 64:ff9b::/96) reaches that IPv4 address: it is judged as one.
  if (zeroUpTo(5) && w[5] === 0xffff) return classifyV4(v4Of(w[6]!, w[7]!))
  if (zeroUpTo(6)) return classifyV4(v4Of(w[6]!, w[7]!))
  if (w[0] === 0x64 && w[1] === 0xff9b && w.slice(2, 6).every((x) => x === 0)) return classifyV4(v4Of(w[6]!, w[7]!))
  // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits.
  if (w[0] === 0x2002) return classifyV4(v4Of(w[1]!, w[2]!))
  const first = w[0]!
  if ((first & 0xfe00) === 0xfc00) return "private" // fc00::/7, unique local
  if ((first & 0xffc0) === 0xfe80) return "link-local" // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return "private" // fec0::/10, the former site-local
  if ((first & 0xff00) === 0xff00) return "multicast" // ff00::/8
  if (first === 0x2001 && w[1] === 0x0db8) return "reserved" // documentation
  if (first === 0x2001 && w[1]! < 0x0200) return "reserved" // IETF protocol assignments (Teredo, ...)
  if ((first & 0xe000) !== 0x2000) return "reserved" // outside 2000::/3, the global unicast space
  return "public"
}

/**
 * The range of an IP address written as text (`10.0.0.5`, `::1`, `[fe80::1%eth0]`), or None when
 * the text is not an IP address (a host name). IPv4 must be in dotted-quad form, which is how a
 * URL's host comes out of `new URL` (`https://2130706433` has the host `127.0.0.1`).
 */
export const classify = (text: string): Option.Option<Range> => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  const v4 = parseV4(bare)
  if (Option.isSome(v4)) return Option.some(classifyV4(v4.value))
  if (!bare.includes(":")) return Option.none()
  return Option.map(parseV6(bare), classifyV6)
}

/** Whether the text is an IP address of the public internet (`false` for a host name). */
export const isPublic = (text: string): boolean => Option.getOrElse(classify(text), () => "not an address") === "public"
