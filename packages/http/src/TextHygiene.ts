/**
 * Text hygiene for every route (CONTRACT §2): a string in the query, the path, a JSON body
 * (object keys and nested values included) or a form body holding U+0000 or an unpaired UTF-16
 * surrogate is refused with 400 `INVALID_BODY` before anything reads it, so nothing stores or
 * compares it.
 */
import { HttpServerRequest } from "@effect/platform"
import { EventInput, Ids } from "@streaks/core"
import { Effect, Option } from "effect"

const hasBody = (method: string) => method === "POST" || method === "PUT" || method === "PATCH" || method === "DELETE"

/** Whether the URL's path segments and query names and values are clean text. */
export const cleanUrl = (url: string): boolean => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  try {
    if (!path.split("/").every((segment) => Ids.isWellFormedText(decodeURIComponent(segment)))) return false
  } catch {
    return false // a malformed escape is not text either
  }
  if (q === -1) return true
  for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
    if (!Ids.isWellFormedText(name) || !Ids.isWellFormedText(value)) return false
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
        return Option.isSome(parsed) && !EventInput.isCleanText(parsed.value)
      }),
      // An unreadable or oversize body is the route's to answer (the same read fails there again).
      Effect.orElseSucceed(() => false)
    )
  }
)
