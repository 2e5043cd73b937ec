/**
 * Where deliveries may connect: the `HttpClient` of the dispatcher, on an undici agent that opens
 * connections only to public internet addresses (`IpAddress`). A host name is resolved when the
 * connection opens and only its public addresses are used, so a name that resolved to a public
 * address when the subscription was made and to the operator's network now (DNS rebinding) gets
 * no connection. Also the system resolver for `Subscriptions.HostResolver`.
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as Undici from "@effect/platform-node/Undici"
import { IpAddress, Subscriptions } from "@streaks/core"
import { Duration, Effect, Layer, Option } from "effect"
import * as Dns from "node:dns"
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from "node:dns"

/** `dns.lookup`'s shape, as `net.connect` calls it (`all` set when it tries several addresses). */
export type Lookup = (
  hostname: string,
  options: LookupOneOptions | LookupAllOptions,
  callback: (
    error: NodeJS.ErrnoException | null,
    address: string | ReadonlyArray<LookupAddress>,
    family?: number
  ) => void
) => void

export interface Options {
  /**
   * Connect to any address, loopback and private networks included
   * (`STREAKS_ALLOW_INSECURE_WEBHOOK_URLS`: development and tests only).
   */
  readonly allowPrivate: boolean
  /** How long opening a connection (and its TLS handshake) may take. Default 5 seconds. */
  readonly connectTimeout?: Duration.DurationInput
  /** Name resolution; default the system's (`dns.lookup`). Tests give their own. */
  readonly lookup?: Lookup
}

/** The error a refused connection fails with (its message becomes the attempt's error). */
export class NotPublicAddress extends Error {
  readonly code = "ERR_STREAKS_NOT_PUBLIC_ADDRESS"
  constructor(host: string) {
    super(`refused: ${host} is not a public internet address`)
  }
}

const systemLookup = Dns.lookup as unknown as Lookup

/** `lookup` that answers only public addresses, and fails when a name has none. */
export const publicOnly = (lookup: Lookup): Lookup => (hostname, options, callback) =>
  lookup(hostname, { ...options, all: true }, (error, found) => {
    if (error !== null) return callback(error, [])
    const usable = (found as ReadonlyArray<LookupAddress>).filter((a) => IpAddress.isPublic(a.address))
    if (usable.length === 0) return callback(new NotPublicAddress(hostname), [])
    if ((options as LookupAllOptions).all === true) return callback(null, usable)
    callback(null, usable[0]!.address, usable[0]!.family)
  })

/**
 * An undici agent whose connections go to public addresses only (unless `allowPrivate`): a literal
 * address is checked before connecting, a name through `publicOnly` at connect time (Node's
 * `net.connect` does not resolve literal addresses, so both are needed).
 */
export const makeAgent = (options: Options): Undici.Agent => {
  const timeout = Duration.toMillis(options.connectTimeout ?? Duration.seconds(5))
  const lookup = options.lookup ?? systemLookup
  if (options.allowPrivate) return new Undici.Agent({ connect: { timeout, lookup: lookup as never } })
  const connector = Undici.buildConnector({ timeout, lookup: publicOnly(lookup) as never })
  return new Undici.Agent({
    connect: (opts, callback) => {
      const range = IpAddress.classify(opts.hostname)
      if (Option.isSome(range) && range.value !== "public") return callback(new NotPublicAddress(opts.hostname), null)
      connector(opts, callback)
    }
  })
}

/** The dispatcher's `HttpClient` on `makeAgent` (destroyed with the layer). */
export const layerHttpClient = (options: Options): Layer.Layer<HttpClient.HttpClient> =>
  NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
    Layer.provide(Layer.scoped(
      NodeHttpClient.Dispatcher,
      Effect.acquireRelease(Effect.sync(() => makeAgent(options)), (agent) => Effect.promise(() => agent.destroy()))
    ))
  )

/** Answers of the resolver that mean "this name has no address" (rather than "try again"). */
const noSuchName = new Set(["ENOTFOUND", "ENODATA"])

/**
 * `Subscriptions.HostResolver` on the system resolver: every address of a name; none when the name
 * does not exist; not resolved (`None`) when the resolver fails otherwise, leaving the check to
 * the connection.
 */
export const layerHostResolver = (lookup: Lookup = systemLookup): Layer.Layer<Subscriptions.HostResolver> =>
  Layer.succeed(Subscriptions.HostResolver, {
    resolve: (host) =>
      Effect.async<Option.Option<ReadonlyArray<string>>>((resume) =>
        lookup(host, { all: true }, (error, found) => {
          if (error === null) {
            return resume(Effect.succeed(Option.some((found as ReadonlyArray<LookupAddress>).map((a) => a.address))))
          }
          resume(Effect.succeed(noSuchName.has(error.code ?? "") ? Option.some([]) : Option.none()))
        })
      )
  })
