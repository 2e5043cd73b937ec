/**
 * Every storage port of `@streaks/core` on SQLite, through `@effect/sql-sqlite-node`
 * (better-sqlite3 underneath). A complete, tested adapter: it passes `storageConformance`.
 *
 * Isolation model: the client has one connection and `Transactor.withTransaction` holds it from
 * BEGIN to COMMIT, so transactions run one at a time (serializable by construction), and every
 * port call outside a transaction runs as its own small transaction. That is what a single-file
 * database can offer; it makes every MUST rule of `Ports.ts` hold without row locks or
 * `SKIP LOCKED`, at the price of one writer at a time (fine for an embedded or edge deployment,
 * not for a fleet of replicas: use `@streaks/storage-pg` there).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { MigrationError } from "@effect/sql/Migrator"
import type { SqlError } from "@effect/sql/SqlError"
import { SqliteClient } from "@effect/sql-sqlite-node"
import {
  AchievementStore,
  ActionLog,
  CredentialStore,
  DirectoryStore,
  ExperimentStore,
  IdempotencyStore,
  MemberStore,
  Outbox,
  type Storage,
  StreakStore,
  SubscriptionStore,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import { Context, Effect, Layer } from "effect"
import type { ConfigError } from "effect/ConfigError"
import { makeOutbox, makeSubscriptionStore } from "./internal/delivery.js"
import { type Ctx, withTransaction } from "./internal/sqlite.js"
import { makeAchievementStore, makeActionLog, makeIdempotencyStore, makeStreakStore } from "./internal/streaks.js"
import {
  makeCredentialStore,
  makeDirectoryStore,
  makeExperimentStore,
  makeMemberStore,
  makeUsageStore
} from "./internal/tenancy.js"
import * as Migrations from "./Migrations.js"

/**
 * The Transactor port: `sql.withTransaction`. Nested calls become savepoints of the outer
 * transaction (they commit with it; a failed inner one rolls back to its savepoint only). A
 * failure, defect or interruption of the unit of work rolls everything back.
 */
export const makeTransactor = (sql: SqlClient.SqlClient): Transactor["Type"] => ({
  withTransaction: (self) => withTransaction(sql, "Transactor.withTransaction")(self)
})

/** Every port over `sql`, whose database must already be migrated. */
export const make = (sql: SqlClient.SqlClient): Context.Context<Storage> => {
  const ctx: Ctx = { sql: sql.withoutTransforms() }
  return Context.make(Transactor, makeTransactor(ctx.sql)).pipe(
    Context.add(DirectoryStore, makeDirectoryStore(ctx)),
    Context.add(MemberStore, makeMemberStore(ctx)),
    Context.add(StreakStore, makeStreakStore(ctx)),
    Context.add(AchievementStore, makeAchievementStore(ctx)),
    Context.add(ActionLog, makeActionLog(ctx)),
    Context.add(IdempotencyStore, makeIdempotencyStore(ctx)),
    Context.add(SubscriptionStore, makeSubscriptionStore(ctx)),
    Context.add(Outbox, makeOutbox(ctx)),
    Context.add(CredentialStore, makeCredentialStore(ctx)),
    Context.add(UsageStore, makeUsageStore(ctx)),
    Context.add(ExperimentStore, makeExperimentStore(ctx))
  )
}

/** Every port on the `SqlClient` in context (a SQLite one); migrates the database first. */
export const layerFromClient: Layer.Layer<Storage, SqlError | MigrationError, SqlClient.SqlClient> = Layer
  .effectContext(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // WAL (set by the client) + NORMAL: durable at checkpoints, no fsync per commit.
      yield* sql.unsafe("PRAGMA synchronous = NORMAL")
      yield* Migrations.run
      return make(sql)
    })
  )

export interface Config {
  /** Path of the database file (created if missing), or ":memory:". */
  readonly filename: string
}

/** Every port on the SQLite database in `filename`, migrated when the layer is built. */
export const layer = (config: Config): Layer.Layer<Storage, SqlError | MigrationError | ConfigError> =>
  layerFromClient.pipe(Layer.provide(SqliteClient.layer({ filename: config.filename })))
