/**
 * The reference storage adapter: every port on in-process maps, safe under concurrent fibers.
 * Used by tests, examples and embedders that need no database; it passes `storageConformance`.
 */
import { Context, Effect, Layer } from "effect"
import { makeAudit } from "./internal/memoryAudit.js"
import { ImportStore } from "./ImportStore.js"
import { makeImports } from "./internal/memoryImports.js"
import { makeCatalog } from "./internal/memoryCatalog.js"
import { makeOutbox } from "./internal/memoryOutbox.js"
import { makeReports } from "./internal/memoryReports.js"
import { makeRunner, makeState } from "./internal/memoryState.js"
import { makeAchievements, makeActionLog, makeIdempotency, makeStreaks } from "./internal/memoryStreaks.js"
import { makeMembers, makeUsage } from "./internal/memoryTenancy.js"
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
} from "./Ports.js"
import { ReportStore } from "./ReportStore.js"
import * as StorageLayer from "./Storage.js"

/**
 * Builds a fresh, empty store and its ports.
 *
 * Isolation is simple and strict: one lock serialises every transaction and every call made
 * outside one (each such call is atomic on its own). `Transactor.withTransaction` holds the lock
 * for the whole unit of work; nested calls on the same fiber join it, and any failure, defect or
 * interruption undoes every write made since it began. Time-ordered scans (`claimDue`) and
 * selections of the catalog other than by id read every record of their kind: fine in memory,
 * whereas SQL adapters use an index.
 */
export const make: Effect.Effect<Context.Context<Storage>> = Effect.sync(() => {
  const state = makeState()
  const runner = makeRunner(state.journal)
  return Context.make(Transactor, { withTransaction: runner.withTransaction }).pipe(
    Context.add(Catalog, makeCatalog(state, runner)),
    Context.add(MemberStore, makeMembers(state, runner)),
    Context.add(StreakStore, makeStreaks(state, runner)),
    Context.add(AchievementStore, makeAchievements(state, runner)),
    Context.add(ActionLog, makeActionLog(state, runner)),
    Context.add(IdempotencyStore, makeIdempotency(state, runner)),
    Context.add(Outbox, makeOutbox(state, runner)),
    Context.add(UsageStore, makeUsage(state, runner)),
    Context.add(ReportStore, makeReports(state, runner)),
    Context.add(AuditLog, makeAudit(state, runner)),
    Context.add(ImportStore, makeImports(state, runner))
  )
})

/**
 * Every storage port in memory, completed with what core builds on them (`Storage.layer`: the
 * directory, subscription, credential and experiment stores, `IngestStore`, `StateStore`); each
 * build of the layer starts empty.
 */
export const layer: Layer.Layer<StorageLayer.Complete> = StorageLayer.layer(Layer.effectContext(make))
