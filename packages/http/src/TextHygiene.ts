/**
 * Text hygiene for every route (docs/api.md#text-hygiene): a string in the query, the path, a JSON
 * body (object keys and nested values included) or a form body holding U+0000 or an unpaired UTF-16
 * surrogate, and a path segment or query parameter whose percent-encoding is malformed or not
 * UTF-8, is refused with 400 `INVALID_BODY` before anything reads it, so nothing stores or
 * compares it.
 */
import { HttpServerRequest } from "@effect/platform"
import { Ids } from "@streaks/core"
import { Effect, Option } from "effect"

const hasBody = (method: string) => method === "POST" || method === "PUT" || method === "PATCH" || method === "DELETE"

/**
 * The text of one percent-encoded piece of a URL, or undefined when it cannot be text: a malformed
 * escape (`%G1`, a lone `%`), bytes that are not UTF-8 (`%ED%A0%80`, `%FF`) or, once decoded,
 * U+0000. Never a U+FFFD in place of what was sent: two different byte strings must not become
 * one name.
 */
export const decodePiece = (piece: string): string | undefined => {
  if (!piece.includes("%")) return piece.includes("\u0000") ? undefined : piece
  let text: string
  try {
    text = decodeURIComponent(piece)
  } catch {
    return undefined
  }
  return Ids.isWellFormedText(text) ? text : undefined
}

/**
 * Whether every path segment and every query name and value of the URL is clean text after
 * percent-decoding (`decodePiece`; `+` in the query is a space, as forms write it).
 */
export const cleanUrl = (url: string): boolean => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  for (const segment of path.split("/")) if (decodePiece(segment) === undefined) return false
  if (q === -1) return true
  const query = url.slice(q + 1)
  if (query === "") return true
  for (const pair of query.split("&")) {
    const eq = pair.indexOf("=")
    const name = eq === -1 ? pair : pair.slice(0, eq)
    const value = eq === -1 ? "" : pair.slice(eq + 1)
    if (decodePiece(name.replace(/\+/g, " ")) === undefined) return false
    if (decodePiece(value.replace(/\+/g, " ")) === undefined) return false
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
