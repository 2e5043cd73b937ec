/**
 * `Transactor` on Postgres: `sql.withTransaction`, except that on a pool made by `PgConnection` an
 * outermost transaction reserves a client of the pool itself and sends its `BEGIN` ahead of its
 * first statement instead of waiting a round trip for it: one round trip less for every ingest
 * batch.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { StorageError } from "@streaks/core/Errors"
import type { Transactor } from "@streaks/core/Ports"
import { Effect, Exit, Option } from "effect"
import type pg from "pg"
import type * as Pools from "./pools.js"
import { storageError } from "./sql.js"
import * as Statements from "./statements.js"

const isSqlError = (u: unknown): u is SqlError => u instanceof SqlError

/** The transaction's own SqlErrors (BEGIN, and COMMIT, which `@effect/sql` reports as a defect) become StorageError. */
const mapped = <A, E, R>(self: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, E | StorageError, R> =>
  self.pipe(
    Effect.mapError((e): E | StorageError => isSqlError(e) ? storageError("Transactor.withTransaction", e) : e as E),
    Effect.catchAllDefect((defect) =>
      isSqlError(defect) ? Effect.fail(storageError("Transactor.withTransaction", defect)) : Effect.die(defect)
    )
  )

/** A client of the pool, for one transaction (given back with `release`). */
const reserve = (pool: pg.Pool) =>
  Effect.async<pg.PoolClient, SqlError>((resume) => {
    pool.connect((cause, client) => {
      if (cause || client === undefined) {
        resume(Effect.fail(new SqlError({ cause, message: "Failed to acquire connection for transaction" })))
      } else {
        resume(Effect.succeed(client))
      }
    })
  })

/**
 * Nested calls become savepoints of the outer transaction (through `sql.withTransaction`, which
 * finds the transaction's connection in context), so they commit with it.
 *
 * Why sending `BEGIN` without waiting is safe: on a pipelined connection Postgres runs what it
 * receives in order, so `BEGIN` runs before the first statement. `BEGIN` fails only with its
 * connection, and then so does everything sent after it; should it ever fail alone, the
 * transaction fails with BEGIN's error. A failed unit of work is rolled back; a failed COMMIT or
 * ROLLBACK fails the transaction with its error.
 */
export const make = (sql: SqlClient.SqlClient, registered: Pools.Registered | undefined): Transactor["Type"] => {
  const standard = <A, E, R>(self: Effect.Effect<A, E, R>) => mapped(sql.withTransaction(self))
  if (registered === undefined) return { withTransaction: standard }
  const { pool, prepare } = registered

  const outermost = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StorageError, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(reserve(pool), (client) => {
        // While the client is out of the pool an error of its connection is ours to hear (the
        // pool listens only to idle clients); the client is then destroyed on release.
        let broken: Error | undefined
        const onError = (cause: Error) => {
          broken = cause
        }
        client.on("error", onError)
        let begun: Exit.Exit<void, SqlError> | undefined
        // Sent now, so it goes out ahead of whatever `self` sends first, and on the extended
        // protocol, which the pool's sockets hold to the end of the tick (`socket.ts`): it leaves
        // in one write with the first statements.
        client.query({ text: "BEGIN", queryMode: "extended" } as pg.QueryConfig, (cause: Error | undefined) => {
          begun = cause ? Exit.fail(new SqlError({ cause, message: "Failed to BEGIN" })) : Exit.void
        })
        const connection = new Statements.PooledConnection(client, prepare)
        return Effect.flatMap(
          Effect.exit(Effect.provideService(restore(self), SqlClient.TransactionConnection, [connection, 0])),
          (exit) =>
            // COMMIT answers after BEGIN (the connection answers in order), so `begun` is known then.
            Effect.map(
              Effect.exit(Statements.run(client, Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK", [], false)),
              (ended): Exit.Exit<A, E | SqlError> => {
                client.off("error", onError)
                client.release(broken)
                if (begun !== undefined && Exit.isFailure(begun)) return Exit.failCause(begun.cause)
                return Exit.isFailure(ended) ? Exit.failCause(ended.cause) : exit
              }
            )
        )
      }).pipe(Effect.flatten)
    ).pipe(mapped)

  return {
    withTransaction: (self) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (outer) => Option.isSome(outer) ? standard(self) : outermost(self)
      )
  }
}
