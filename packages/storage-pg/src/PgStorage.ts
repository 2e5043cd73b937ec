/**
 * Every storage port of `@streaks/core` on PostgreSQL, from an `@effect/sql` `SqlClient`, with
 * Postgres' own `IngestStore` and `StateStore`. Building the layer runs the migrations first (see
 * `Migrations`), so a fresh database is ready when the layer is.
 *
 * Every port call runs one statement (a few have a rare retry or a lock taken first), on the
 * transaction's connection when called inside `Transactor.withTransaction`, else on any pooled
 * connection. Driver failures surface as `StorageError` only.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { MigrationError } from "@effect/sql/Migrator"
import { ImportStore } from "@streaks/core/ImportStore"
import { IngestStore } from "@streaks/core/IngestStore"
import {
  AchievementStore,
  ActionLog,
  AuditLog,
  Catalog,
  type CatalogRecords,
  IdempotencyStore,
  MemberStore,
  Outbox,
  type Storage,
  StreakStore,
  Transactor,
  UsageStore
} from "@streaks/core/Ports"
import { ReportStore } from "@streaks/core/ReportStore"
import { StateStore } from "@streaks/core/StateStore"
import * as CoreStorage from "@streaks/core/Storage"
import { Context, Effect, Layer } from "effect"
import * as Migrations from "./Migrations.js"
import { makeAchievementStore } from "./internal/achievementStore.js"
import { makeActionLog } from "./internal/actionLog.js"
import { makeAuditLog } from "./internal/auditLog.js"
import { makeCatalog } from "./internal/catalog.js"
import { fillText } from "./internal/experimentMembers.js"
import { makeIdempotencyStore } from "./internal/idempotencyStore.js"
import { makeImportStore } from "./internal/importStore.js"
import * as PgIngest from "./internal/ingestStore.js"
import { makeMemberStore } from "./internal/memberStore.js"
import { makeOutbox } from "./internal/outbox.js"
import * as Pools from "./internal/pools.js"
import { makeReportStore } from "./internal/reportStore.js"
import { type Ctx, io, makeQuery, makeTables } from "./internal/sql.js"
import { makeStateStore } from "./internal/stateStore.js"
import { makeStreakStore } from "./internal/streakStore.js"
import * as Transactions from "./internal/transactor.js"
import { makeUsageStore } from "./internal/usageStore.js"

export interface Options {
  /** Table name prefix, as for `Migrations.run`. Default `"streaks_"`. */
  readonly prefix?: string | undefined
}

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`

/**
 * The catalog, whose insert of an experiment also fills the Proof rollup of its members active
 * near its start (internal/experimentMembers.ts): later days are written with their rows.
 */
const withProofFill = (sql: SqlClient.SqlClient, prefix: string, catalog: Catalog["Type"]): Catalog["Type"] => ({
  ...catalog,
  insert: (kind, record) =>
    kind !== "experiment" ? catalog.insert(kind, record) : Effect.tap(catalog.insert(kind, record), (inserted) => {
      if (!inserted) return Effect.void
      const e = record as CatalogRecords["experiment"]
      return sql.unsafe(fillText(
        prefix,
        `e.project_id = ${quoted(e.projectId)} AND e.id = ${quoted(e.id)}`,
        quoted(e.projectId)
      )).pipe(
        Effect.asVoid,
        io("Catalog.insert")
      )
    })
})

/**
 * Every port over `sql` and the tables under `prefix`, with Postgres' `IngestStore` and
 * `StateStore`, without running migrations. What core builds on the ports (the directory and the
 * other stores on the `Catalog`) is added by `CoreStorage.layer`, as `layer` does.
 */
export const make = (
  sql: SqlClient.SqlClient,
  prefix: string = Migrations.defaultPrefix
): Context.Context<Storage | IngestStore | StateStore> => {
  // Our statements name their columns in snake_case; a client configured with name transforms
  // (camelCase results, say) must not rewrite them.
  const raw = sql.withoutTransforms()
  const pool = Pools.poolOf(sql)
  const ctx: Ctx = { sql: raw, t: makeTables(raw, prefix), prefix, query: makeQuery(pool) }
  const stores = {
    catalog: withProofFill(raw, prefix, makeCatalog(ctx)),
    members: makeMemberStore(ctx),
    streaks: makeStreakStore(ctx),
    achievements: makeAchievementStore(ctx),
    idempotency: makeIdempotencyStore(ctx),
    log: makeActionLog(ctx),
    outbox: makeOutbox(ctx),
    usage: makeUsageStore(ctx)
  }
  return Context.empty().pipe(
    // On a pool registered by PgConnection, transactions send BEGIN with their first statements.
    Context.add(Transactor, Transactions.make(raw, pool)),
    Context.add(Catalog, stores.catalog),
    Context.add(MemberStore, stores.members),
    Context.add(StreakStore, stores.streaks),
    Context.add(AchievementStore, stores.achievements),
    Context.add(ActionLog, stores.log),
    Context.add(IdempotencyStore, stores.idempotency),
    Context.add(Outbox, stores.outbox),
    Context.add(UsageStore, stores.usage),
    Context.add(ReportStore, makeReportStore(ctx)),
    Context.add(AuditLog, makeAuditLog(ctx)),
    Context.add(ImportStore, makeImportStore(ctx, pool)),
    // Ingest's reads and writes as whole statements of their own (internal/ingestStore.ts), and
    // the widgets' read in one statement (internal/stateStore.ts).
    Context.add(IngestStore, PgIngest.make(stores)),
    Context.add(StateStore, makeStateStore(ctx))
  )
}

/**
 * Every store core reads and writes through (`CoreStorage.Complete`: the ports, the stores core
 * builds on them, Postgres' `IngestStore` and `StateStore`) on the `SqlClient` in context. Runs the
 * migrations (under `prefix`) when built; fails with their `MigrationError`/`SqlError` if the
 * database cannot be prepared.
 */
export const layer = (
  options: Options = {}
): Layer.Layer<CoreStorage.Complete, SqlError | MigrationError, SqlClient.SqlClient> =>
  CoreStorage.layer(Layer.effectContext(
    Effect.gen(function*() {
      yield* Migrations.run(options)
      const sql = yield* SqlClient.SqlClient
      return make(sql, options.prefix ?? Migrations.defaultPrefix)
    })
  ))
