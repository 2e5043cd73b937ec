/**
 * `Transactor` on Postgres: `sql.withTransaction`, except that on a pipelining pool (made by
 * `PgConnection`) an outermost transaction sends its `BEGIN` ahead of its first statement instead
 * of waiting a round trip for it: one round trip less for every ingest batch.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { StorageError } from "@streaks/core/Errors"
import type { Transactor } from "@streaks/core/Ports"
import { Effect, Exit, Option } from "effect"
import type pg from "pg"
import { rawQuery, storageError } from "./Sql.js"

const isSqlError = (u: unknown): u is SqlError => u instanceof SqlError

/** The transaction's own SqlErrors (BEGIN, and COMMIT, which the client reports as a defect) become StorageError. */
const mapped = <A, E, R>(self: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, E | StorageError, R> =>
  self.pipe(
    Effect.mapError((e): E | StorageError => isSqlError(e) ? storageError("Transactor.withTransaction", e) : e as E),
    Effect.catchAllDefect((defect) =>
      isSqlError(defect) ? Effect.fail(storageError("Transactor.withTransaction", defect)) : Effect.die(defect)
    )
  )

/** The node-postgres client behind a reserved `@effect/sql-pg` connection (a field it keeps). */
const clientOf = (connection: unknown): pg.PoolClient | undefined => {
  const client = (connection as { readonly pg?: unknown }).pg
  return typeof client === "object" && client !== null && typeof (client as pg.PoolClient).query === "function"
    ? client as pg.PoolClient
    : undefined
}

/**
 * Nested calls become savepoints of the outer transaction (through `sql.withTransaction`), so
 * they commit with it.
 *
 * Why sending `BEGIN` without waiting is safe: on a pipelined connection Postgres runs what it
 * receives in order, so `BEGIN` runs before the first statement. `BEGIN` fails only with its
 * connection, and then so does everything sent after it; should it ever fail alone, the
 * transaction fails with BEGIN's error. A failed unit of work is rolled back; a failed COMMIT or
 * ROLLBACK fails the transaction with its error.
 */
export const make = (sql: SqlClient.SqlClient, pipelined: boolean): Transactor["Type"] => {
  const standard = <A, E, R>(self: Effect.Effect<A, E, R>) => mapped(sql.withTransaction(self))
  if (!pipelined) return { withTransaction: standard }
  // Cleared if a reserved connection ever shows no node-postgres client (another driver version):
  // then every transaction takes the standard way.
  let early = true

  /** The unit of work on a reserved connection with `BEGIN` sent ahead; `undefined`: no client to send it on. */
  const onReserved = <A, E, R>(
    restore: <X, Y, Z>(effect: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>,
    self: Effect.Effect<A, E, R>
  ): Effect.Effect<Exit.Exit<A, E | SqlError> | undefined, SqlError, R> =>
    Effect.scoped(Effect.flatMap(sql.reserve, (connection) => {
      const client = clientOf(connection)
      if (client === undefined) return Effect.succeed(undefined)
      let begun: Exit.Exit<void, SqlError> | undefined
      // Sent now, so it goes out ahead of whatever `self` sends first.
      client.query("BEGIN", (cause: Error | undefined) => {
        begun = cause ? Exit.fail(new SqlError({ cause, message: "Failed to BEGIN" })) : Exit.void
      })
      return Effect.flatMap(
        Effect.exit(Effect.provideService(restore(self), SqlClient.TransactionConnection, [connection, 0])),
        (exit) =>
          // COMMIT answers after BEGIN (the connection answers in order), so `begun` is known then.
          Effect.map(Effect.exit(rawQuery(client, Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK")), (ended) => {
            if (begun !== undefined && Exit.isFailure(begun)) return Exit.failCause(begun.cause)
            return Exit.isFailure(ended) ? Exit.failCause(ended.cause) : exit
          })
      )
    }))

  const outermost = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StorageError, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(onReserved(restore, self), (exit): Effect.Effect<A, E | SqlError | StorageError, R> => {
        if (exit !== undefined) return exit
        early = false
        return restore(standard(self))
      })
    ).pipe(mapped)

  return {
    withTransaction: (self) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (outer) => Option.isSome(outer) || !early ? standard(self) : outermost(self)
      )
  }
}
