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
import type { MigrationError } from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { SqliteClient } from "@effect/sql-sqlite-node"
import {
  AchievementStore,
  ActionLog,
  AuditLog,
  Catalog,
  IdempotencyStore,
  MemberStore,
  Outbox,
  type Storage,
  StreakStore,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import { ImportStore } from "@streaks/core/ImportStore"
import { ReportStore } from "@streaks/core/ReportStore"
import * as CoreStorage from "@streaks/core/Storage"
import { Context, Effect, Layer } from "effect"
import type { ConfigError } from "effect/ConfigError"
import { makeAchievementStore } from "./internal/achievementStore.js"
import { makeActionLog } from "./internal/actionLog.js"
import { makeAuditLog } from "./internal/auditLog.js"
import { makeCatalog } from "./internal/catalog.js"
import { makeIdempotencyStore } from "./internal/idempotencyStore.js"
import { makeImportStore } from "./internal/importStore.js"
import { makeMemberStore } from "./internal/memberStore.js"
import { makeOutbox } from "./internal/outbox.js"
import { makeReportStore } from "./internal/reportStore.js"
import { withTransaction } from "./internal/sqlite.js"
import { makeStreakStore } from "./internal/streakStore.js"
import { makeUsageStore } from "./internal/usageStore.js"
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
export const make = (client: SqlClient.SqlClient): Context.Context<Storage> => {
  const sql = client.withoutTransforms()
  return Context.make(Transactor, makeTransactor(sql)).pipe(
    Context.add(Catalog, makeCatalog(sql)),
    Context.add(MemberStore, makeMemberStore(sql)),
    Context.add(StreakStore, makeStreakStore(sql)),
    Context.add(AchievementStore, makeAchievementStore(sql)),
    Context.add(ActionLog, makeActionLog(sql)),
    Context.add(IdempotencyStore, makeIdempotencyStore(sql)),
    Context.add(Outbox, makeOutbox(sql)),
    Context.add(UsageStore, makeUsageStore(sql)),
    Context.add(ReportStore, makeReportStore(sql)),
    Context.add(AuditLog, makeAuditLog(sql)),
    Context.add(ImportStore, makeImportStore(sql))
  )
}

/** The ports on the `SqlClient` in context (a SQLite one); migrates the database first. */
export const portsFromClient: Layer.Layer<Storage, SqlError | MigrationError, SqlClient.SqlClient> = Layer
  .effectContext(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // WAL (set by the client) + NORMAL: durable at checkpoints, no fsync per commit.
      yield* sql.unsafe("PRAGMA synchronous = NORMAL")
      yield* Migrations.run
      return make(sql)
    })
  )

/**
 * Every store core needs on the `SqlClient` in context: the ports, completed by core with what it
 * builds on them (`Storage.layer`: the directory, subscription, credential and experiment stores
 * on the `Catalog`, `IngestStore` and `StateStore` from the ports).
 */
export const layerFromClient: Layer.Layer<CoreStorage.Complete, SqlError | MigrationError, SqlClient.SqlClient> =
  CoreStorage.layer(portsFromClient)

export interface Config {
  /** Path of the database file (created if missing), or ":memory:". */
  readonly filename: string
}

/** Every store core needs, on the SQLite database in `filename`, migrated when the layer is built. */
export const layer = (
  config: Config
): Layer.Layer<CoreStorage.Complete, SqlError | MigrationError | ConfigError> =>
  layerFromClient.pipe(Layer.provide(SqliteClient.layer({ filename: config.filename })))
