/**
 * Plumbing shared by every port: the exclusive unit each port call runs in, the mapping of driver
 * errors to core's `StorageError`, the first-insert-wins insert, and records as rows (the column
 * of each field, and the conversions between domain values and SQLite).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Row } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { StorageError } from "@streaks/core/Errors"
import { Effect } from "effect"

export type { Row }

const describe = (error: SqlError): string => {
  const cause = error.cause as { readonly message?: unknown; readonly code?: unknown } | undefined
  const detail = typeof cause?.message === "string" ? cause.message : String(error.message)
  return typeof cause?.code === "string" ? `${detail} (${cause.code})` : detail
}

/** A StorageError naming the port operation; the driver error stays as the cause for logs. */
const storageError = (op: string, error: SqlError): StorageError =>
  new StorageError({ message: `${op}: ${describe(error)}`, cause: error })

/**
 * `sql.withTransaction` with driver failures as `StorageError`. The unit of work's own errors pass
 * through unchanged; a failed COMMIT, which `@effect/sql` reports as a defect, becomes a StorageError.
 */
export const withTransaction =
  (sql: SqlClient.SqlClient, op: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError> | StorageError, R> =>
    sql.withTransaction(self).pipe(
      Effect.mapError((e) => (e instanceof SqlError ? storageError(op, e) : (e as Exclude<E, SqlError>))),
      Effect.catchAllDefect((defect) =>
        defect instanceof SqlError ? Effect.fail(storageError(op, defect)) : Effect.die(defect)
      )
    )

/**
 * Runs one port call as an exclusive unit: its own transaction, or a savepoint of the caller's.
 *
 * Why every call, even a single statement: `@effect/sql-sqlite-node` has ONE connection. A
 * transaction holds it from BEGIN to COMMIT, but a plain query only waits for it while it is
 * handed out, not while it runs; wrapped like this, a query can never land inside another
 * fiber's open transaction. Serial transactions are also what makes `StreakStore.lock` and
 * `claimDue` keep their MUST rules here: nothing else runs until the unit of work commits.
 */
export const port =
  (sql: SqlClient.SqlClient, op: string) => <A>(self: Effect.Effect<A, SqlError>): Effect.Effect<A, StorageError> =>
    withTransaction(sql, op)(self)

/**
 * Inserts `row` into `table` unless it breaks a primary key or unique index, and answers whether it
 * did: the first insert wins, also among concurrent callers, and a later one changes nothing.
 */
export const insertNew = (sql: SqlClient.SqlClient, table: string, row: Row): Effect.Effect<boolean, SqlError> =>
  sql`INSERT INTO ${sql(table)} ${sql.insert(row)} ON CONFLICT DO NOTHING RETURNING 1 AS ok`.pipe(
    Effect.map((rows) => rows.length > 0)
  )

// --- Records as rows ---------------------------------------------------------------------------

/** How one field of a record is stored: the column a selection names, and the conversions both ways. */
export interface Column<A> {
  readonly name: string
  /** The columns the field sets (one, as a rule). */
  readonly encode: (value: A) => Row
  /** `undefined` for NULL: the field is absent. */
  readonly decode: (row: Row) => A | undefined
}

/** A column holding one field: `encode` gives its stored value, `decode` reads it back (never called on NULL). */
export const column = <A>(name: string, encode: (value: A) => unknown, decode: (stored: unknown) => A): Column<A> => ({
  name,
  encode: (value) => ({ [name]: encode(value) }),
  decode: (row) => (row[name] === null || row[name] === undefined ? undefined : decode(row[name]))
})

/** TEXT: ids, names, and `LocalDate`s as `YYYY-MM-DD` (they sort as text, and no zone sneaks in). */
export const text = <A extends string = string>(name: string) => column<A>(name, (v) => v, (v) => v as A)
/** INTEGER counts, REAL measures. */
export const number = (name: string) => column<number>(name, (v) => v, Number)
/** Instants as INTEGER milliseconds: exact, and they sort. */
export const instant = (name: string) => column<Date>(name, (d) => d.getTime(), (v) => new Date(Number(v)))
/** better-sqlite3 binds no booleans: 0/1. */
export const flag = (name: string) => column<boolean>(name, (b) => (b ? 1 : 0), (v) => v === 1)
/** Lists and nested objects as JSON TEXT; `decode` rebuilds classes from the parsed value. */
export const json = <A>(name: string, decode: (parsed: any) => A = (parsed) => parsed) =>
  column<A>(name, (v) => JSON.stringify(v), (v) => decode(JSON.parse(String(v))))

/** A record type as a row: its class, and the column of each field. */
export interface Codec<A> {
  readonly Class: new(fields: any, options: true) => A
  readonly columns: { readonly [F in keyof A]-?: Column<Exclude<A[F], undefined>> }
}

/** The columns of the fields `record` holds; an absent field is left out, so it stays (or becomes) NULL. */
export const encode = <A>(codec: Codec<A>, record: Partial<A>): Row =>
  Object.assign(
    {},
    ...Object.entries(codec.columns as Record<string, Column<unknown>>).map(([field, column]) => {
      const value = (record as Record<string, unknown>)[field]
      return value === undefined ? {} : column.encode(value)
    })
  )

/** The record a row holds, without re-validation (it was valid when stored); a NULL column is an absent field. */
export const decode = <A>(codec: Codec<A>) => (row: Row): A => {
  const fields: Record<string, unknown> = {}
  for (const [field, column] of Object.entries(codec.columns as Record<string, Column<unknown>>)) {
    const value = column.decode(row)
    if (value !== undefined) fields[field] = value
  }
  return new codec.Class(fields, true)
}
