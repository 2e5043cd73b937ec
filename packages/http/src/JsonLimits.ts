/**
 * Per-part size limits of an ingest body (docs/api.md#order-of-checks, step 1): `meta`, `details`,
 * `performance`, `error` and `consent` are each bounded by the size of their JSON.
 */
import { Effect, Option } from "effect"

/** The bounded parts of an ingest body, in the order they are checked. */
export type Part = "meta" | "details" | "performance" | "error" | "consent"

/** Limit of each part, in UTF-8 bytes of its compact JSON (`JSON.stringify`). */
export const limits: { readonly [K in Part]: number } = {
  meta: 4096,
  details: 4096,
  performance: 4096,
  error: 2048,
  consent: 1024
}

const parts: ReadonlyArray<Part> = ["meta", "details", "performance", "error", "consent"]

/** A part over its limit. */
export interface Oversize {
  readonly part: Part
  readonly bytes: number
  readonly limit: number
}

/**
 * Size of `value` as compact UTF-8 JSON. Whitespace of the raw body does not count, so the
 * limit is the same whatever the sender's formatting. A value that cannot be serialised
 * (nesting too deep for the stack) counts as infinitely large.
 */
export const jsonBytes = (value: unknown): number => {
  try {
    const json = JSON.stringify(value)
    return json === undefined ? 0 : Buffer.byteLength(json, "utf8")
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/**
 * The first part of `body` over its limit, or none. Anything but a JSON object has no parts
 * (its shape is for the schema to reject); absent and `undefined` parts are within limits.
 */
export const oversize = (body: unknown): Option.Option<Oversize> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Option.none()
  const record = body as Record<string, unknown>
  for (const part of parts) {
    if (!Object.prototype.hasOwnProperty.call(record, part)) continue
    const value = record[part]
    if (value === undefined) continue
    const limit = limits[part]
    const bytes = jsonBytes(value)
    if (bytes > limit) return Option.some({ part, bytes, limit })
  }
  return Option.none()
}

/**
 * Fails with `onOversize(first oversize part)` when a part is over its limit; handlers pass the
 * core error that answers 413 `PAYLOAD_TOO_LARGE`.
 */
export const check = <E>(body: unknown, onOversize: (oversize: Oversize) => E): Effect.Effect<void, E> =>
  Option.match(oversize(body), { onNone: () => Effect.void, onSome: (o) => Effect.fail(onOversize(o)) })
