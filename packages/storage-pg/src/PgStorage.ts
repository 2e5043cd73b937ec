/**
 * Every storage port of `@streaks/core` on PostgreSQL, from an `@effect/sql` `SqlClient`.
 * Building the layer runs the migrations first (see `Migrations`), so a fresh database is ready
 * when the layer is.
 *
 * Every port call runs one statement (a few have a rare retry), on the transaction's connection
 * when called inside `Transactor.withTransaction`, else on any pooled connection. Driver failures
 * surface as `StorageError` only.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { MigrationError } from "@effect/sql/Migrator"
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
import { IngestStore } from "@streaks/core/IngestStore"
import { Context, Effect, Layer } from "effect"
import * as Migrations from "./Migrations.js"
import { makeActionLog, makeIdempotencyStore } from "./internal/Actions.js"
import { makeCredentialStore, makeDirectoryStore, makeMemberStore, makeUsageStore } from "./internal/Directory.js"
import { makeExperimentStore, makeOutbox, makeSubscriptionStore } from "./internal/Delivery.js"
import * as PgIngest from "./internal/Ingest.js"
import * as Pools from "./internal/Pools.js"
import { type Ctx, makeHot, makeTables } from "./internal/Sql.js"
import * as Transactions from "./internal/Transactions.js"
import { makeAchievementStore, makeStreakStore } from "./internal/Streaks.js"

export interface Options {
  /** Table name prefix, as for `Migrations.run`. Default `"streaks_"`. */
  readonly prefix?: string | undefined
}

/** Builds every port over `sql` and the tables under `prefix`, without running migrations. */
export const make = (
  sql: SqlClient.SqlClient,
  prefix: string = Migrations.defaultPrefix
): Context.Context<Storage | IngestStore> => {
  // Our statements name their columns in snake_case; a client configured with name transforms
  // (camelCase results, say) must not rewrite them.
  const raw = sql.withoutTransforms()
  const pool = Pools.poolOf(sql)
  const ctx: Ctx = { sql: raw, t: makeTables(raw, prefix), prefix, hot: makeHot(pool) }
  const stores = {
    members: makeMemberStore(ctx),
    streaks: makeStreakStore(ctx),
    achievements: makeAchievementStore(ctx),
    idempotency: makeIdempotencyStore(ctx),
    experiments: makeExperimentStore(ctx),
    subscriptions: makeSubscriptionStore(ctx),
    log: makeActionLog(ctx),
    outbox: makeOutbox(ctx),
    usage: makeUsageStore(ctx)
  }
  return Context.empty().pipe(
    // Pools registered by PgConnection pipeline their connections.
    Context.add(Transactor, Transactions.make(raw, pool !== undefined)),
    Context.add(DirectoryStore, makeDirectoryStore(ctx)),
    Context.add(MemberStore, stores.members),
    Context.add(StreakStore, stores.streaks),
    Context.add(AchievementStore, stores.achievements),
    Context.add(ActionLog, stores.log),
    Context.add(IdempotencyStore, stores.idempotency),
    Context.add(SubscriptionStore, stores.subscriptions),
    Context.add(Outbox, stores.outbox),
    Context.add(CredentialStore, makeCredentialStore(ctx)),
    Context.add(UsageStore, stores.usage),
    Context.add(ExperimentStore, stores.experiments),
    // Ingest's reads and writes as whole statements of their own (internal/Ingest.ts).
    Context.add(IngestStore, PgIngest.make(stores))
  )
}

/**
 * Every port of `Storage` on the `SqlClient` in context. Runs the migrations (under `prefix`)
 * when built; fails with their `MigrationError`/`SqlError` if the database cannot be prepared.
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Storage | IngestStore, SqlError | MigrationError, SqlClient.SqlClient> =>
  Layer.effectContext(
    Effect.gen(function*() {
      yield* Migrations.run(options)
      const sql = yield* SqlClient.SqlClient
      return make(sql, options.prefix ?? Migrations.defaultPrefix)
    })
  )
