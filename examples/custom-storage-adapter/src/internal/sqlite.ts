/**
 * Plumbing shared by every port: the exclusive unit each port call runs in, the mapping of driver
 * errors to core's `StorageError`, and the value conversions between domain types and SQLite.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { LocalDate } from "@streaks/core/Calendar"
import { StorageError } from "@streaks/core/Errors"
import { Effect } from "effect"

export type Row = Record<string, unknown>

/** What every port implementation closes over. */
export interface Ctx {
  readonly sql: SqlClient.SqlClient
}

const isSqlError = (u: unknown): u is SqlError => u instanceof SqlError

const describe = (error: SqlError): string => {
  const cause = error.cause as { readonly message?: unknown; readonly code?: unknown } | undefined
  const detail = typeof cause?.message === "string" ? cause.message : String(error.message)
  return typeof cause?.code === "string" ? `${detail} (${cause.code})` : detail
}

/** A StorageError naming the port operation; the driver error stays as the cause for logs. */
export const storageError = (op: string, error: SqlError): StorageError =>
  new StorageError({ message: `${op}: ${describe(error)}`, cause: error })

/**
 * `sql.withTransaction` with driver failures as `StorageError`. The unit of work's own errors pass
 * through unchanged; a failed COMMIT, which `@effect/sql` reports as a defect, becomes a StorageError.
 */
export const withTransaction =
  (sql: SqlClient.SqlClient, op: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError> | StorageError, R> =>
    sql.withTransaction(self).pipe(
      Effect.mapError((e) => (isSqlError(e) ? storageError(op, e) : (e as Exclude<E, SqlError>))),
      Effect.catchAllDefect((
        defect
      ) => (isSqlError(defect) ? Effect.fail(storageError(op, defect)) : Effect.die(defect)))
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

// --- Values -------------------------------------------------------------------------------------

/** Instants are stored as INTEGER milliseconds. */
export const ms = (d: Date): number => d.getTime()
export const optMs = (d: Date | undefined): number | null => (d === undefined ? null : d.getTime())
export const toDate = (v: unknown): Date => new Date(Number(v))
export const toOptDate = (v: unknown): Date | undefined => (v === null || v === undefined ? undefined : toDate(v))

/** better-sqlite3 binds no booleans: 0/1. */
export const bool = (b: boolean): number => (b ? 1 : 0)

export const toLocalDate = (v: unknown): LocalDate => String(v) as LocalDate
export const toOptLocalDate = (v: unknown): LocalDate | undefined =>
  v === null || v === undefined ? undefined : toLocalDate(v)

export const toOptString = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : String(v))

/** `undefined` → NULL; better-sqlite3 refuses `undefined` as a parameter. */
export const nullable = <A>(v: A | undefined): A | null => (v === undefined ? null : v)

/**
 * `{ [key]: value }` when the column holds a value, `{}` for NULL: spread into a constructor
 * argument so an optional field is absent, as `exactOptionalPropertyTypes` wants.
 */
export const opt = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V }

/** Schema classes are built from trusted rows without re-validation. */
export const trusted = true as const
