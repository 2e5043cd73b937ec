/**
 * One delivery attempt over `HttpClient`: a signed POST with a 15 s timeout around the whole
 * attempt and a shorter one for the answer's headers, redirects not followed (a 3xx is a failure),
 * never failing the effect: network errors and timeouts come back as an attempt to retry. The
 * receiver's answer body is read only up to a few KB and then dropped, so a receiver cannot make
 * the service hold or wait for a large body.
 */
import { HttpClient, type HttpClientResponse, HttpClientRequest } from "@effect/platform"
import { Clock, Duration, Effect, Stream } from "effect"
import * as RetryPolicy from "./RetryPolicy.js"
import * as Signature from "./Signature.js"

export interface Request {
  readonly url: string
  /** The message id: the `webhook-id`, the same on every attempt. */
  readonly id: string
  readonly body: string
  readonly secret: string
  /** The attempt's time: its `webhook-timestamp`. */
  readonly now: Date
  readonly timeout?: Duration.DurationInput
  /** How long the receiver may take to send its status and headers (at most `timeout`). */
  readonly headersTimeout?: Duration.DurationInput
}

export interface Attempt {
  readonly status: number | undefined
  readonly latencyMs: number
  readonly error: string | undefined
  readonly retryAfter: Duration.Duration | undefined
  readonly outcome: RetryPolicy.Outcome
}

export const defaultTimeout = Duration.seconds(15)

export const defaultHeadersTimeout = Duration.seconds(10)

/** Bytes of the answer body read at most; the rest is never read (the connection is closed). */
export const maxResponseBytes = 4096

/** How long the answer body may take to arrive, up to `maxResponseBytes`, once the status is known. */
const bodyWindow = Duration.seconds(1)

/**
 * Reads and drops at most `maxResponseBytes` of the body within `bodyWindow`. The status already
 * decided the attempt, so a body that is larger, slower or broken changes nothing: stopping the
 * read destroys the body, which closes its connection instead of draining it.
 */
const discardBody = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<void> => {
  let read = 0
  return response.stream.pipe(
    Stream.takeUntil((chunk) => (read += chunk.length) >= maxResponseBytes),
    Stream.runDrain,
    Effect.timeout(bodyWindow),
    Effect.ignore
  )
}

/** `Retry-After` as delta-seconds or an HTTP date, relative to `now`. */
export const parseRetryAfter = (value: string | undefined, now: Date): Duration.Duration | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Duration.seconds(Number(trimmed))
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Duration.millis(Math.max(0, at - now.getTime()))
}

/** An error's message with its cause's (the transport's reason: refused, reset, not public...). */
const withCause = (e: { readonly message: string; readonly cause?: unknown }): string =>
  e.cause instanceof Error && e.cause.message !== "" ? `${e.message}: ${e.cause.message}` : e.message

export const send = (request: Request): Effect.Effect<Attempt, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // Redirects are not followed (the undici client does not; the fetch client would): 3xx is a failure.
    const client = yield* HttpClient.HttpClient
    const started = yield* Clock.currentTimeMillis
    const signed = Signature.headers(request.secret, request.id, request.body, request.now)
    const result = yield* HttpClientRequest.post(request.url).pipe(
      HttpClientRequest.setHeaders({ ...signed, "user-agent": "Streaks-Webhooks/1" }),
      HttpClientRequest.bodyText(request.body, "application/json"),
      client.execute,
      Effect.timeout(request.headersTimeout ?? defaultHeadersTimeout),
      Effect.tap(discardBody),
      Effect.timeout(request.timeout ?? defaultTimeout),
      Effect.either
    )
    const latencyMs = (yield* Clock.currentTimeMillis) - started
    if (result._tag === "Left") {
      const e = result.left
      const error = e._tag === "TimeoutException" ? "timeout" : withCause(e)
      return { status: undefined, latencyMs, error, retryAfter: undefined, outcome: "retry" } satisfies Attempt
    }
    const response = result.right
    return {
      status: response.status,
      latencyMs,
      error: undefined,
      retryAfter: parseRetryAfter(response.headers["retry-after"], request.now),
      outcome: RetryPolicy.classify(response.status)
    } satisfies Attempt
  })
