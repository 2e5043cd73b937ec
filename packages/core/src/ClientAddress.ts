/**
 * Who a request comes from when reverse proxies stand in front of the service (docs/operations.md
 * "Behind a proxy"): the TCP peer, unless the peer is a proxy the operator trusts; then the
 * right-most address of `Forwarded: for=` (RFC 7239), or else of `X-Forwarded-For`, that is not
 * itself trusted, and the scheme from `Forwarded: proto=` or `X-Forwarded-Proto`. From a peer that
 * is not trusted these headers are ignored: anyone can write them. Pure text, no HTTP.
 */
import { Config, ConfigError, Context, Either, Layer, Option } from "effect"
import * as IpAddress from "./IpAddress.js"

/** One trusted range: the first `bits` bits of `bytes` (16 bytes, IPv4 mapped into IPv6). */
interface Range {
  readonly bytes: Uint8Array
  readonly bits: number
}

/** The proxies whose forwarding headers are believed. */
export interface Trust {
  readonly ranges: ReadonlyArray<Range>
}

/** No proxy is trusted: the client is always the TCP peer. */
export const none: Trust = { ranges: [] }

const rangeOf = (text: string): Either.Either<ReadonlyArray<Range>, string> => {
  if (text === "loopback") return Either.map(Either.all([rangeOf("127.0.0.0/8"), rangeOf("::1")]), (r) => r.flat())
  const slash = text.indexOf("/")
  const address = slash === -1 ? text : text.slice(0, slash)
  const bytes = IpAddress.toBytes(address)
  if (Option.isNone(bytes)) return Either.left(`not an IP address, CIDR or "loopback": ${text}`)
  const v4 = !address.includes(":")
  const width = v4 ? 32 : 128
  const prefix = slash === -1 ? width : Number(text.slice(slash + 1))
  if (!/^\d{1,3}$/.test(slash === -1 ? "0" : text.slice(slash + 1)) || prefix > width) {
    return Either.left(`not a valid prefix length: ${text}`)
  }
  return Either.right([{ bytes: bytes.value, bits: v4 ? 96 + prefix : prefix }])
}

/**
 * The trusted proxies of `STREAKS_TRUSTED_PROXIES`: comma-separated IPs, CIDRs (`10.0.0.0/8`,
 * `fd00::/8`) and the word `loopback` (`127.0.0.0/8` and `::1`); blank means none.
 */
export const parseTrust = (text: string): Either.Either<Trust, string> =>
  Either.map(
    Either.all(text.split(",").map((s) => s.trim()).filter((s) => s.length > 0).map(rangeOf)),
    (ranges) => ({ ranges: ranges.flat() })
  )

const within = (bytes: Uint8Array, range: Range): boolean => {
  const whole = range.bits >> 3
  for (let i = 0; i < whole; i++) if (bytes[i] !== range.bytes[i]) return false
  const rest = range.bits & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return (bytes[whole]! & mask) === (range.bytes[whole]! & mask)
}

/** Whether `address` (an IP address as text) is one of the trusted proxies. */
export const isTrusted = (trust: Trust, address: string): boolean => {
  if (trust.ranges.length === 0) return false
  const bytes = IpAddress.toBytes(address)
  return Option.isSome(bytes) && trust.ranges.some((range) => within(bytes.value, range))
}

/** What a request says about where it comes from: its TCP peer and its forwarding headers. */
export interface Request {
  /** The TCP peer's address; undefined when the socket is already gone. */
  readonly peer: string | undefined
  /** Whether the connection to this process is TLS. */
  readonly encrypted: boolean
  readonly forwarded: string | undefined
  readonly xForwardedFor: string | undefined
  readonly xForwardedProto: string | undefined
}

/** The client of a request: its address (the rate limits' and logs' key) and the scheme it used. */
export interface Client {
  readonly address: string
  readonly scheme: "http" | "https"
}

/** A hop as written in a header, with a port or brackets removed (`"[2001:db8::1]:4711"`, `192.0.2.1:80`). */
const hostOf = (text: string): string => {
  let t = text.trim()
  if (t.startsWith("\"") && t.endsWith("\"") && t.length >= 2) t = t.slice(1, -1)
  if (t.startsWith("[")) {
    const end = t.indexOf("]")
    return end === -1 ? t : t.slice(1, end)
  }
  // IPv4 with a port; an IPv6 address has more than one colon.
  const colon = t.indexOf(":")
  return colon !== -1 && colon === t.lastIndexOf(":") ? t.slice(0, colon) : t
}

interface Hop {
  readonly host: string
  readonly proto: string | undefined
}

/** The elements of `Forwarded` (RFC 7239 §4), each with its `for` and `proto`; quoted commas kept. */
const forwardedHops = (header: string): Array<Hop> => {
  const hops: Array<Hop> = []
  let pairs: Record<string, string> = {}
  let name = ""
  let value = ""
  let inName = true
  let quoted = false
  const endPair = () => {
    if (name.trim() !== "") pairs[name.trim().toLowerCase()] = value.trim()
    name = ""
    value = ""
    inName = true
  }
  const endElement = () => {
    endPair()
    hops.push({ host: hostOf(pairs["for"] ?? ""), proto: pairs["proto"]?.replace(/^"|"$/g, "").toLowerCase() })
    pairs = {}
  }
  for (const c of header) {
    if (quoted) {
      value += c
      if (c === "\"") quoted = false
    } else if (c === ",") endElement()
    else if (c === ";") endPair()
    else if (inName && c === "=") inName = false
    else if (inName) name += c
    else {
      if (c === "\"") quoted = true
      value += c
    }
  }
  endElement()
  return hops
}

const listOf = (header: string): Array<string> => header.split(",").map((s) => s.trim())

const schemeOf = (proto: string | undefined, fallback: "http" | "https"): "http" | "https" =>
  proto === "https" || proto === "http" ? proto : fallback

/**
 * The client of `request` under `trust`: walking the hops from the right (the peer first), the
 * first address that is not a trusted proxy. A hop that is not an address (`unknown`, an
 * obfuscated name) stops the walk at the trusted proxy that wrote it. `Forwarded` is read when
 * present, else `X-Forwarded-For` with `X-Forwarded-Proto`.
 */
export const resolve = (trust: Trust, request: Request): Client => {
  const own: "http" | "https" = request.encrypted ? "https" : "http"
  const peer = request.peer ?? "unknown"
  if (!isTrusted(trust, peer)) return { address: peer, scheme: own }
  let hops: Array<Hop>
  if (request.forwarded !== undefined && request.forwarded.trim() !== "") {
    hops = forwardedHops(request.forwarded)
  } else if (request.xForwardedFor !== undefined && request.xForwardedFor.trim() !== "") {
    const protos = request.xForwardedProto === undefined ? [] : listOf(request.xForwardedProto.toLowerCase())
    const hosts = listOf(request.xForwardedFor)
    // One scheme for the whole chain (the usual `X-Forwarded-Proto: https`), else aligned from the right.
    hops = hosts.map((h, i) => ({
      host: hostOf(h),
      proto: protos.length === 1 ? protos[0] : protos[protos.length - hosts.length + i]
    }))
  } else {
    return { address: peer, scheme: own }
  }
  let client: Client = { address: peer, scheme: own }
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (Option.isNone(IpAddress.toBytes(hop.host))) return client
    client = { address: hop.host, scheme: schemeOf(hop.proto, client.scheme) }
    if (!isTrusted(trust, hop.host)) return client
  }
  return client
}

/** The trusted proxies of this deployment, for every reader of client addresses. */
export class TrustedProxies extends Context.Tag("@streaks/core/ClientAddress/TrustedProxies")<
  TrustedProxies,
  Trust
>() {}

export const layer = (trust: Trust): Layer.Layer<TrustedProxies> => Layer.succeed(TrustedProxies, trust)

/** `STREAKS_TRUSTED_PROXIES` (default: none). */
export const config: Config.Config<Trust> = Config.string("STREAKS_TRUSTED_PROXIES").pipe(
  Config.withDefault(""),
  Config.mapOrFail((text) =>
    Either.mapLeft(parseTrust(text), (message) => ConfigError.InvalidData(["STREAKS_TRUSTED_PROXIES"], message))
  )
)

export const layerConfig: Layer.Layer<TrustedProxies, ConfigError.ConfigError> = Layer.effect(TrustedProxies, config)

/** `resolve` over a request's header map (lower-case names, as HTTP servers give them). */
export const resolveHeaders = (
  trust: Trust,
  peer: string | undefined,
  encrypted: boolean,
  headers: Readonly<Record<string, string | undefined>>
): Client =>
  resolve(trust, {
    peer,
    encrypted,
    forwarded: headers["forwarded"],
    xForwardedFor: headers["x-forwarded-for"],
    xForwardedProto: headers["x-forwarded-proto"]
  })
