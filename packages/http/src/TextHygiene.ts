/**
 * Text hygiene for every route (docs/api.md#text-hygiene): a string in the query, the path, a JSON body
 * (object keys and nested values included) or a form body holding U+0000 or an unpaired UTF-16
 * surrogate is refused with 400 `INVALID_BODY` before anything reads it, so nothing stores or
 * compares it.
 */
import { HttpServerRequest } from "@effect/platform"
import { Ids } from "@streaks/core"
import { Effect, Option } from "effect"

const hasBody = (method: string) => method === "POST" || method === "PUT" || method === "PATCH" || method === "DELETE"

/**
 * A path segment as text. A malformed escape (`%E0%A4%A`) is kept raw: it names nothing that can
 * exist (an unknown siteKey, id or route), so the route answers it as it answers any unknown name.
 */
const segmentText = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * The URL with each path segment that holds a malformed escape escaped once more, so that the
 * router reads it as the raw text `segmentText` checks instead of matching no route: an unknown
 * siteKey in a webhook path answers `INVALID_SITE_KEY`, as any other unknown key does. Any other
 * URL is returned as it is.
 */
export const rawMalformedEscapes = (url: string): string => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  if (!path.includes("%")) return url
  let changed = false
  const segments = path.split("/").map((segment) => {
    if (!segment.includes("%")) return segment
    try {
      decodeURIComponent(segment)
      return segment
    } catch {
      changed = true
      return encodeURIComponent(segment)
    }
  })
  return changed ? segments.join("/") + (q === -1 ? "" : url.slice(q)) : url
}

/** Whether the URL's path segments and query names and values are clean text. */
export const cleanUrl = (url: string): boolean => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  if (!path.split("/").every((segment) => Ids.isWellFormedText(segmentText(segment)))) return false
  if (q === -1) return true
  for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
    if (!Ids.isWellFormedText(name) || !Ids.isWellFormedText(value)) return false
  }
  return true
}

/**
 * `EventInput.isCleanText` without recursion: every string of a parsed JSON value, object keys
 * included, is clean text. A body may nest as deep as its 64 KiB allow, deeper than the call stack
 * goes; how deep is for the route to judge (the per-part limits of the ingest doors).
 */
export const cleanJson = (value: unknown): boolean => {
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const u = pending.pop()
    if (typeof u === "string") {
      if (!Ids.isWellFormedText(u)) return false
    } else if (Array.isArray(u)) {
      for (const v of u) pending.push(v)
    } else if (typeof u === "object" && u !== null) {
      for (const key in u) {
        if (!Ids.isWellFormedText(key)) return false
        pending.push((u as Record<string, unknown>)[key])
      }
    }
  }
  return true
}

/**
 * Whether the request must be refused: its URL or JSON body holds text that is not clean. A body
 * that is not JSON is left to the route's decoder.
 */
export const refuses: Effect.Effect<boolean, never, HttpServerRequest.HttpServerRequest> = Effect.flatMap(
  HttpServerRequest.HttpServerRequest,
  (request) => {
    if (!cleanUrl(request.url)) return Effect.succeed(true)
    if (!hasBody(request.method)) return Effect.succeed(false)
    // A JSON body (HttpApi reads a body without a type as JSON) and a form body (HttpApi decodes
    // its fields into a JSON route's payload too) are checked. A body of another type is not read
    // here: its decoder reads the request's stream again, which a read here would have drained, and
    // would wait for it forever.
    const type = request.headers["content-type"]?.toLowerCase()
    if (type !== undefined && type.includes("x-www-form-urlencoded")) {
      return request.text.pipe(Effect.map((text) => !cleanUrl(`/?${text}`)), Effect.orElseSucceed(() => false))
    }
    if (type !== undefined && !type.includes("application/json")) return Effect.succeed(false)
    return request.text.pipe(
      Effect.map((text) => {
        if (text === "") return false
        const parsed = Option.liftThrowable(JSON.parse)(text)
        return Option.isSome(parsed) && !cleanJson(parsed.value)
      }),
      // An unreadable or oversize body is the route's to answer (the same read fails there again).
      Effect.orElseSucceed(() => false)
    )
  }
)
