/**
 * The reference server's lean node:http path for the hot public routes (`POST /v1/e`,
 * `/v1/server/e`, `/v1/webhook/:siteKey/e`, `GET /v1/state` and their CORS preflights). It skips
 * the platform's HTTP pipeline (see docs/decisions/0002) but runs the same `Doors` effects of
 * `@streaks/http` as the HttpApi handlers, with the same schemas, limits and error bodies. Anything
 * else falls through to HttpApi. It is runtime machinery, installed by `Main` through
 * `Http.layerServer`'s `front`; the library serves the same routes through HttpApi alone.
 */
import { Aliases, type Errors, EventInput, Ids, Ingest, StateQuery } from "@streaks/core"
import { Headers, HttpTraceContext } from "@effect/platform"
import { Cors, Doors, HttpErrors, JsonLimits, type NodeServer, RateLimit } from "@streaks/http"
import * as TextHygiene from "@streaks/http/TextHygiene"
import { Cause, Context, Effect, Either, Exit, FiberId, FiberRef, Option, Runtime, Schema, Tracer } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"

export type Services = Ingest.Ingest | StateQuery.StateQuery | RateLimit.RateLimiter | Aliases.Aliases

const json = "application/json"

const write = (res: ServerResponse, answer: Doors.Answer): void => {
  const body = JSON.stringify(answer.body)
  res.writeHead(answer.status, {
    ...answer.headers,
    "content-type": json,
    "content-length": Buffer.byteLength(body)
  })
  res.end(body)
}

const fail = (res: ServerResponse, status: number, code: string): void => {
  const body = HttpErrors.errorBody(code)
  res.writeHead(status, { "content-type": json, "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

const factsOf = (req: IncomingMessage): Doors.StateFacts => ({
  origin: header(req, "origin"),
  serverToken: header(req, "x-streak-server-token"),
  identityToken: header(req, "x-streak-identity"),
  ip: req.socket.remoteAddress ?? "unknown"
})

/**
 * Reads the body up to the 64 KiB limit: a declared or streamed overflow answers 413 (the rest is
 * drained and the connection closed, so the client sees the answer rather than a reset).
 */
const readBody = (req: IncomingMessage, res: ServerResponse, then: (text: string) => void): void => {
  const declared = Number(header(req, "content-length") ?? 0)
  if (declared > HttpErrors.maxBodyBytes) {
    res.shouldKeepAlive = false
    req.resume()
    return fail(res, 413, "PAYLOAD_TOO_LARGE")
  }
  const chunks: Array<Buffer> = []
  let size = 0
  let over = false
  req.on("data", (chunk: Buffer) => {
    if (over) return
    size += chunk.length
    if (size > HttpErrors.maxBodyBytes) {
      over = true
      res.shouldKeepAlive = false
      fail(res, 413, "PAYLOAD_TOO_LARGE")
      return
    }
    chunks.push(chunk)
  })
  req.on("end", () => {
    if (!over) then(Buffer.concat(chunks).toString("utf8"))
  })
  req.on("error", () => {
    if (!res.headersSent) fail(res, 400, "INVALID_BODY")
  })
}

/** Steps 1 and 2 of docs/api.md#order-of-checks for a JSON body: parts over their limit, then not JSON at all. */
const parse = (text: string): Either.Either<unknown, readonly [number, string]> => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return Either.left([400, "INVALID_BODY"] as const)
  }
  return Option.isSome(JsonLimits.oversize(body))
    ? Either.left([413, "PAYLOAD_TOO_LARGE"] as const)
    : Either.right(body)
}

/**
 * Core's text check (`EventInput.checkEventRecord`, `decodeWebhookEvent`) walks the body
 * recursively, and 64 KiB of `[` nest deeper than the call stack goes in a field that no part
 * limit covers: the walk then throws, which must not escape the request listener (that would crash
 * the process). Such a body is decided as the HttpApi handlers decide it: the text check without
 * recursion (`TextHygiene.cleanJson`), then the schema, which reads only the documented fields.
 */
const nestedTooDeep = (e: unknown): boolean => e instanceof RangeError

const decodeFirst = <A, I>(schema: Schema.Schema<A, I>) =>
  Schema.decodeUnknownEither(schema, { errors: "first", onExcessProperty: "ignore" })

const decodeAsHttpApi = <A, I>(schema: Schema.Schema<A, I>, body: unknown): Either.Either<A, Errors.InvalidBody> =>
  TextHygiene.cleanJson(body)
    ? Either.mapLeft(decodeFirst(schema)(body), (e) => EventInput.invalidBody(e))
    : Either.left(EventInput.uncleanText())

/**
 * The siteKey of a webhook path. A malformed escape (`%E0%A4%A`) must not throw out of the
 * request listener (that would crash the process); such a key cannot exist, so it is kept raw
 * and answered INVALID_SITE_KEY like any unknown key.
 */
const decodeSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

export interface Options {
  /**
   * A server span for each request on the hot routes, as the platform's tracer middleware gives
   * the HttpApi routes: named `http.server <METHOD>`, child of the caller's `traceparent` or b3
   * headers, with the method, path, user agent, client address and response status. The query
   * string is left out (`GET /v1/state` may carry an identity token in it). Default false: the
   * hot routes make no spans, not even the storage's (docs/performance.md). Spans go to the
   * runtime's tracer, and none are made where that runtime has tracing disabled.
   */
  readonly tracing?: boolean | undefined
  /**
   * How an action's front (decode, auth, joining its group) is run once its body is read (default:
   * at once). A server runtime may queue it behind the answers it hands back (the reference
   * server's event-loop slices, `EventLoopQueue.shared`).
   */
  readonly schedule?: ((front: () => void) => void) | undefined
}

type Door = "browser" | "server" | "webhook" | "state" | "preflight"

const WEBHOOK = /^\/v1\/webhook\/([^/?]+)\/e$/

/** Which hot door a request is for, if any. */
const doorOf = (method: string | undefined, path: string): Door | undefined => {
  if (method === "POST") {
    if (path === "/v1/e") return "browser"
    if (path === "/v1/server/e") return "server"
    return WEBHOOK.test(path) ? "webhook" : undefined
  }
  if (method === "GET") return path === "/v1/state" ? "state" : undefined
  if (method === "OPTIONS") return Cors.corsPaths.includes(path) ? "preflight" : undefined
  return undefined
}

/** The fast path over a runtime that holds the core services and the rate limiter. */
export const make = (runtime: Runtime.Runtime<Services>, options: Options = {}): NodeServer.FastPath => {
  // Without tracing, no spans on the hot routes (one per SQL statement otherwise), set once on the
  // runtime rather than per request.
  const quiet = Runtime.setFiberRef(runtime, FiberRef.currentTracerEnabled, false)
  const logDefect = Runtime.runFork(quiet)
  /** Writes the answer; a defect answers 500 INTERNAL and is logged, as HttpErrors does for HttpApi. */
  const respond = (res: ServerResponse) => (exit: Exit.Exit<Doors.Answer>): void => {
    if (Exit.isSuccess(exit)) return write(res, exit.value)
    if (!Cause.isInterruptedOnly(exit.cause)) logDefect(Effect.logError("defect on a public door", exit.cause))
    if (!res.headersSent) fail(res, 500, "INTERNAL")
  }

  /** Runs a door's effect in a fiber of its own and writes its answer. */
  const answer = (
    rt: Runtime.Runtime<Services>,
    res: ServerResponse,
    door: Effect.Effect<Doors.Answer, never, Services>
  ) => Runtime.runCallback(rt)(door, { onExit: respond(res) })

  // Time for the body's `ts` check is the runtime's clock.
  const clock = Runtime.runSync(runtime)(Effect.clock)
  const schedule = options.schedule ?? ((front: () => void) => front())
  const ingest = (
    rt: Runtime.Runtime<Services>,
    req: IncomingMessage,
    res: ServerResponse,
    door: "browser" | "server"
  ) =>
    readBody(req, res, (text) =>
      schedule(() => {
        const body = parse(text)
        if (Either.isLeft(body)) return fail(res, body.left[0], body.left[1])
        let action: Either.Either<EventInput.Action, Errors.InvalidBody>
        try {
          action = EventInput.checkEventRecord(body.right, new Date(clock.unsafeCurrentTimeMillis()))
        } catch (e) {
          if (!nestedTooDeep(e)) throw e
          return answer(
            rt,
            res,
            decodeAsHttpApi(EventInput.EventRecord, body.right).pipe(
              Effect.flatMap(EventInput.fromEventRecord),
              Effect.flatMap((deep) => Doors.ingest(door, deep, factsOf(req))),
              Effect.catchTag("InvalidBody", (e) => Effect.succeed(Doors.errorAnswer(e)))
            )
          )
        }
        if (Either.isLeft(action)) return write(res, Doors.errorAnswer(action.left))
        answer(rt, res, Doors.ingest(door, action.right, factsOf(req)))
      }))

  const webhook = (rt: Runtime.Runtime<Services>, req: IncomingMessage, res: ServerResponse, siteKey: string) =>
    readBody(req, res, (text) => {
      const body = parse(text)
      if (Either.isLeft(body)) return fail(res, body.left[0], body.left[1])
      let decoded: Effect.Effect<EventInput.Action, Errors.InvalidBody>
      try {
        decoded = EventInput.decodeWebhookEvent(body.right)
      } catch (e) {
        if (!nestedTooDeep(e)) throw e
        decoded = Effect.flatMap(decodeAsHttpApi(EventInput.WebhookEvent, body.right), EventInput.fromWebhookEvent)
      }
      answer(
        rt,
        res,
        decoded.pipe(
          Effect.flatMap((action) => Doors.webhook(siteKey, action, header(req, "x-streak-webhook-secret"))),
          Effect.catchTag("InvalidBody", (e) => Effect.succeed(Doors.errorAnswer(e)))
        )
      )
    })

  const state = (rt: Runtime.Runtime<Services>, req: IncomingMessage, res: ServerResponse, search: string) => {
    const q = new URLSearchParams(search)
    const siteKey = q.get("siteKey")
    const userHash = q.get("userHash")
    if (siteKey === null || userHash === null) return fail(res, 400, "INVALID_BODY")
    const facts = factsOf(req)
    answer(
      rt,
      res,
      Doors.state(
        { siteKey, userHash, event: q.get("event") ?? undefined, kind: q.get("kind") ?? undefined },
        {
          origin: facts.origin,
          serverToken: facts.serverToken,
          identityToken: facts.identityToken ?? q.get("identity") ?? undefined,
          ip: facts.ip
        }
      )
    )
  }

  /** `query`: where the URL's query string starts (its `?`), or -1. */
  const serve = (
    rt: Runtime.Runtime<Services>,
    door: Door,
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: number
  ) => {
    switch (door) {
      case "browser":
      case "server":
        return ingest(rt, req, res, door)
      case "webhook": {
        const siteKey = decodeSegment(WEBHOOK.exec(path)![1]!)
        // Text hygiene (docs/api.md#text-hygiene): the body's strings are checked by the decoder, the path's here.
        return Ids.isWellFormedText(siteKey) ? webhook(rt, req, res, siteKey) : fail(res, 400, "INVALID_BODY")
      }
      case "state":
        return state(rt, req, res, query === -1 ? "" : req.url!.slice(query + 1))
      case "preflight":
        res.writeHead(204, Cors.preflightHeaders(header(req, "origin")))
        res.end()
    }
  }

  /**
   * With tracing, the request's server span, ended when the response closes, and a runtime whose
   * work (a storage read on a cache miss, a log line) runs under it as the span's children.
   */
  const startSpan = Runtime.runSync(runtime)
  const tracedRuntime = (req: IncomingMessage, res: ServerResponse, path: string): Runtime.Runtime<Services> => {
    const span = startSpan(Effect.makeSpan(`http.server ${req.method}`, {
      kind: "server",
      parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(Headers.fromInput(req.headers))),
      captureStackTrace: false,
      attributes: {
        "http.request.method": req.method,
        "url.path": path,
        "url.scheme": "http",
        ...(req.headers["user-agent"] !== undefined ? { "user_agent.original": req.headers["user-agent"] } : {}),
        ...(req.socket.remoteAddress !== undefined ? { "client.address": req.socket.remoteAddress } : {})
      }
    }))
    res.once("close", () => {
      if (res.headersSent) span.attribute("http.response.status_code", res.statusCode)
      span.end(clock.unsafeCurrentTimeNanos(), res.writableFinished ? Exit.void : Exit.interrupt(FiberId.none))
    })
    return Runtime.make({
      context: Context.add(runtime.context, Tracer.ParentSpan, span),
      fiberRefs: runtime.fiberRefs,
      runtimeFlags: runtime.runtimeFlags
    })
  }

  const tracing = options.tracing === true
  return (req, res) => {
    const url = req.url ?? ""
    const query = url.indexOf("?")
    const path = query === -1 ? url : url.slice(0, query)
    const door = doorOf(req.method, path)
    if (door === undefined) return false
    serve(tracing ? tracedRuntime(req, res, path) : quiet, door, req, res, path, query)
    return true
  }
}

/**
 * The fast path built from the services in context, in front of `api` (for `Http.layerServer`'s or
 * `NodeServer.layerHttpApi`'s `front`).
 * Requests run with just the four services they use: a fiber's services are copied whenever one is
 * provided or a scope opened inside it (once per SQL statement), and the server's are many.
 */
export const front = (api: (req: IncomingMessage, res: ServerResponse) => void, options: Options = {}) =>
  Effect.map(Effect.runtime<Services>(), (all) => {
    const runtime = Runtime.make({
      context: Context.pick(Ingest.Ingest, StateQuery.StateQuery, RateLimit.RateLimiter, Aliases.Aliases)(all.context),
      fiberRefs: all.fiberRefs,
      runtimeFlags: all.runtimeFlags
    })
    const fast = make(runtime, options)
    return (req: IncomingMessage, res: ServerResponse) => {
      if (!fast(req, res)) api(req, res)
    }
  })
