/**
 * The access log (`STREAKS_ACCESS_LOG`): one log line per request once it is answered or its
 * connection closes, naming the client as the edge resolves it (trusted proxies only), the
 * method, the path without its query, the status and the time taken.
 */
import type { ClientAddress as CoreClientAddress } from "@streaks/core"
import { Effect, Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as ClientAddress from "./ClientAddress.js"
import type * as NodeServer from "./NodeServer.js"

/** What one line says. `status` 0: the connection closed before an answer was sent. */
export interface Entry {
  readonly client: string
  readonly method: string
  /** The path alone: a query string may carry what should not be logged. */
  readonly path: string
  readonly status: number
  readonly durationMs: number
}

/** The entry of a request answered (or abandoned) `durationMs` after it arrived. */
export const entryOf = (
  trust: CoreClientAddress.Trust,
  req: IncomingMessage,
  res: ServerResponse,
  durationMs: number
): Entry => {
  const url = req.url ?? "/"
  const query = url.indexOf("?")
  return {
    client: ClientAddress.ofNode(trust, req).address,
    method: req.method ?? "GET",
    path: query < 0 ? url : url.slice(0, query),
    status: res.writableFinished ? res.statusCode : 0,
    durationMs: Math.round(durationMs * 10) / 10
  }
}

/** `handler` with a line logged at info level (annotated with the entry) after each request. */
export const handler = (
  inner: NodeServer.Handler
): Effect.Effect<NodeServer.Handler> =>
  Effect.gen(function*() {
    const trust = yield* ClientAddress.trust
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    return (req, res) => {
      const started = performance.now()
      // `close` comes after `finish` for an answered request, and alone for an abandoned one.
      res.once("close", () => {
        const entry = entryOf(trust, req, res, performance.now() - started)
        runFork(Effect.logInfo("http request").pipe(Effect.annotateLogs({ ...entry })))
      })
      inner(req, res)
    }
  })
