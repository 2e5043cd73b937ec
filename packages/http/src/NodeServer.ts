/**
 * The node:http server under the Streaks app (RECIPES recipes 2–3): one server we own, so a lean
 * fast path can sit in front of the HttpApi handler, with the body-abort guard and graceful close.
 */
import {
  type HttpApi,
  type HttpApp,
  HttpApiBuilder,
  HttpRouter,
  HttpServerError,
  type HttpServerRequest
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Duration, Effect, Layer, type Scope } from "effect"
import { createServer, IncomingMessage, type Server, type ServerOptions, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as HttpErrors from "./HttpErrors.js"

/** A node:http request listener. */
export type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** A fast path: answers the request and returns true, or returns false to fall through. */
export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean

/**
 * The requests of `makeServer`, with the body-abort guard. When the platform aborts a body read at
 * the size limit it calls `req.destroy()`, which would reset the socket before the 413 is written
 * (chunked bodies). Instead: discard the rest of the body, let the 413 go out with
 * `Connection: close`. Node's own aborts (which pass an error, or come after the body ended) keep
 * their behaviour. Armed with the request's response when the request has a body.
 *
 * Why a subclass rather than a closure set on each request: with the closure, young-generation
 * collections promoted requests into the old generation under load, which then grew until a full
 * collection (the mechanism was not pinned down; docs/performance.md).
 */
export class GuardedRequest extends IncomingMessage {
  response: ServerResponse | undefined = undefined
  override destroy(error?: Error): this {
    const res = this.response
    if (res === undefined || error !== undefined || this.complete || this.socket.destroyed) return super.destroy(error)
    res.shouldKeepAlive = false
    this.removeAllListeners("data")
    this.resume()
    return this
  }
}

/**
 * The responses of `makeServer`: each knows its slot among the responses in flight. (Node passes
 * the request to the constructor; the field is set before any listener runs.)
 */
export class TrackedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  slot = -1
}

/**
 * The responses in flight, each in a slot that is emptied when it settles. Not a `Set`: V8 keeps
 * a long-lived `Set`'s replaced tables, with the entries they held, until the next full
 * collection, so a `Set` that every request passed through kept whole requests alive into the
 * old generation (docs/performance.md).
 * An emptied slot holds nothing.
 */
class InFlight {
  private readonly slots: Array<TrackedResponse | undefined> = []
  private readonly free: Array<number> = []
  add(res: TrackedResponse): void {
    const slot = this.free.pop() ?? this.slots.length
    this.slots[slot] = res
    res.slot = slot
  }
  delete(res: TrackedResponse): void {
    if (res.slot < 0 || this.slots[res.slot] !== res) return
    this.slots[res.slot] = undefined
    this.free.push(res.slot)
    res.slot = -1
  }
  forEach(f: (res: ServerResponse) => void): void {
    for (const res of this.slots) if (res !== undefined) f(res)
  }
}

// Per server made by `makeServer`: the responses in flight, and whether a graceful close began.
interface State {
  closing: boolean
  readonly inFlight: InFlight
}
const states = new WeakMap<Server, State>()

/**
 * How long an idle kept-alive connection stays open. Whoever closes an idle connection races a
 * request the other side may be sending on it at that moment, which then sees the socket closed
 * before its answer. Clients (browsers, undici's 4 seconds) and load balancers (60 seconds) give up
 * on idle connections sooner, so they close first and that race is theirs to avoid, not a request
 * lost to Node's 5-second default.
 */
export const keepAliveTimeoutMs = 65_000

/**
 * A node:http server with the body-abort guard (`GuardedRequest`) and the tracking of responses
 * in flight for a graceful `close` (`TrackedResponse`), and `handler` (if given) as its request
 * listener. `options` may not replace the two classes.
 */
export const makeServer = (handler?: Handler, options: ServerOptions = {}): Server => {
  const server = createServer({
    keepAliveTimeout: keepAliveTimeoutMs,
    ...options,
    IncomingMessage: GuardedRequest,
    ServerResponse: TrackedResponse
  })
  const state: State = { closing: false, inFlight: new InFlight() }
  states.set(server, state)
  // One listener for every response, not a closure per request (this runs on every request).
  const settled = function(this: TrackedResponse) {
    state.inFlight.delete(this)
  }
  server.prependListener("request", (req: GuardedRequest, res: TrackedResponse) => {
    // Only a request with a body can be cut off at the body limit.
    if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) {
      req.response = res
    }
    // During a graceful close, a request on a kept-alive socket is its last one.
    if (state.closing) res.shouldKeepAlive = false
    state.inFlight.add(res)
    res.on("close", settled)
  })
  if (handler !== undefined) server.on("request", handler)
  return server
}

/** `fast` first; requests it declines go to `fallback` (the HttpApi handler). */
export const withFastPath = (fast: FastPath, fallback: Handler): Handler => (req, res) => {
  if (!fast(req, res)) fallback(req, res)
}

/** Starts listening; fails with `ServeError` when the address cannot be bound. */
export const listen = (
  server: Server,
  options: { readonly port: number; readonly host?: string | undefined }
): Effect.Effect<AddressInfo, HttpServerError.ServeError> =>
  Effect.async<AddressInfo, HttpServerError.ServeError>((resume) => {
    const onError = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
    server.once("error", onError)
    server.listen({ port: options.port, host: options.host ?? "127.0.0.1" }, () => {
      server.off("error", onError)
      resume(Effect.succeed(server.address() as AddressInfo))
    })
  })

/**
 * Graceful close: stop accepting connections, close idle keep-alive sockets, let in-flight
 * requests finish (their sockets close after the answer), and after `timeout` destroy whatever
 * is left. The timeout uses a real timer, not `Clock`, so shutdown also works under TestClock.
 */
export const close = (server: Server, timeout: Duration.DurationInput = "10 seconds"): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const state = states.get(server)
    if (state !== undefined) {
      state.closing = true
      state.inFlight.forEach((res) => {
        // Node keeps a socket alive after its in-flight answer even while closing; make each
        // in-flight answer the socket's last, so close() completes when the last one is sent.
        if (!res.headersSent) res.shouldKeepAlive = false
        else if (res.writableFinished) setImmediate(() => server.closeIdleConnections())
        else res.once("finish", () => setImmediate(() => server.closeIdleConnections()))
      })
    }
    const timer = setTimeout(() => server.closeAllConnections(), Duration.toMillis(timeout))
    if (!server.listening) {
      clearTimeout(timer)
      server.closeAllConnections()
      return resume(Effect.void)
    }
    server.close(() => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    server.closeIdleConnections()
  })

export interface Options {
  /** Port to listen on; 0 picks a free one (tests). */
  readonly port: number
  /** Default 127.0.0.1. */
  readonly host?: string | undefined
  /** How long in-flight requests may run after shutdown starts (default 10 seconds). */
  readonly shutdownTimeout?: Duration.DurationInput | undefined
  readonly serverOptions?: ServerOptions | undefined
}

/** The running server: the node:http `Server` and where it listens. */
export class NodeServer extends Context.Tag("@streaks/http/NodeServer")<NodeServer, {
  readonly server: Server
  readonly host: string
  readonly port: number
  /** `http://host:port`, no trailing slash. */
  readonly url: string
}>() {}

/** Serves `handler` for the life of the scope; closing the scope closes gracefully. */
export const serve = (
  handler: Handler,
  options: Options
): Effect.Effect<NodeServer["Type"], HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* Effect.acquireRelease(
      Effect.sync(() => makeServer(handler, options.serverOptions)),
      (server) => close(server, options.shutdownTimeout)
    )
    const address = yield* listen(server, options)
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    return { server, host: address.address, port: address.port, url: `http://${host}:${address.port}` }
  })

/** A `NodeServer` serving the handler that `handler` builds (e.g. with a captured runtime). */
export const layer = <E, R>(
  handler: Effect.Effect<Handler, E, R>,
  options: Options
): Layer.Layer<NodeServer, E | HttpServerError.ServeError, Exclude<R, Scope.Scope>> =>
  Layer.scoped(NodeServer, Effect.flatMap(handler, (h) => serve(h, options)))

/**
 * The node:http listener of an `HttpApp`, with `HttpErrors.withInternalFallback` around it, so
 * nothing the app lets through answers an empty 500.
 */
export const appHandler = <E, R>(
  app: HttpApp.Default<E, R>
): Effect.Effect<Handler, never, Exclude<R, Scope.Scope | HttpServerRequest.HttpServerRequest>> =>
  NodeHttpServer.makeHandler(HttpErrors.withInternalFallback(app))

/** The listener of the HttpApi app (needs the API layer, e.g. `HttpApiBuilder.api(Api)` + groups). */
export const httpApiHandler: Effect.Effect<
  Handler,
  never,
  HttpApi.Api | HttpApiBuilder.Router | HttpApiBuilder.Middleware | HttpRouter.HttpRouter.DefaultServices
> = Effect.flatMap(
  // The router's default refuses a path parameter over 100 characters as an unknown route (404);
  // the bounds of each parameter are the decoders' to enforce (400), so no URL line is cut short.
  HttpRouter.withRouterConfig(HttpApiBuilder.httpApp, { maxParamLength: 16 * 1024 }),
  appHandler
)

/**
 * Serves the HttpApi app on a server we own. `front` may put a fast path in front of it:
 * `(api) => Effect.map(Effect.runtime<Services>(), (rt) => NodeServer.withFastPath(fast(rt), api))`.
 * Provide the API layer (`HttpApiBuilder.api(Api)` with its groups and `HttpErrors.ErrorMapping`).
 */
export const layerHttpApi = <E = never, R = never>(
  options: Options,
  front?: (api: Handler) => Effect.Effect<Handler, E, R>
): Layer.Layer<NodeServer, E | HttpServerError.ServeError, HttpApi.Api | Exclude<R, Scope.Scope>> =>
  layer(
    front === undefined ? httpApiHandler : Effect.flatMap(httpApiHandler, front),
    options
  ).pipe(
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, NodeHttpServer.layerContext])
  )
