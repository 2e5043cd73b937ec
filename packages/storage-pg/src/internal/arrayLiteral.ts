/**
 * Postgres array literals for statement parameters, built in one pass. Every multi-row statement
 * passes its columns as arrays (`unnest`), and node-postgres's own conversion (`arrayString`) was
 * the largest allocation of an ingest batch: two regex replaces and a few concatenations for each
 * element. The text is the same, character for character, so Postgres sees no difference.
 */

// Characters that node-postgres escapes inside a quoted element (and Postgres needs escaped).
const SPECIAL = /["\\]/
const SPECIALS = /["\\]/g

const isPlain = (value: unknown): boolean => {
  const type = typeof value
  return type === "string" || type === "number" || type === "boolean" || type === "bigint"
}

const quoted = (value: unknown): string => {
  const text = String(value)
  return `"${SPECIAL.test(text) ? text.replace(SPECIALS, "\\$&") : text}"`
}

/**
 * `values` as node-postgres would send it, `{"a","b",NULL}`, when every element is a string,
 * number, boolean, bigint, null or undefined; otherwise (dates, buffers, nested arrays, objects)
 * `undefined`, and node-postgres converts the array itself.
 */
export const literal = (values: ReadonlyArray<unknown>): string | undefined => {
  if (values.length === 0) return "{}"
  let simple = true
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (value === null || value === undefined) {
      simple = false
    } else if (!isPlain(value)) {
      return undefined
    } else if (simple && typeof value === "string" && SPECIAL.test(value)) {
      simple = false
    }
  }
  // The common case: one join, no string per element.
  if (simple) return `{"${values.join("\",\"")}"}`
  const parts = new Array<string>(values.length)
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    parts[i] = value === null || value === undefined ? "NULL" : quoted(value)
  }
  return `{${parts.join(",")}}`
}

/** The parameters with each array of plain values as its literal; the same list when there is none. */
export const params = (values: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  let out: Array<unknown> | undefined
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (!Array.isArray(value)) continue
    const text = literal(value)
    if (text === undefined) continue
    out ??= values.slice()
    out[i] = text
  }
  return out ?? values
}
