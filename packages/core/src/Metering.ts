/**
 * Metering of active streakers (docs/api.md#get-usage), the service: records the members a counted
 * live action makes active and judges a workspace's month against its current plan. The rules
 * themselves (what counts, what is over the plan) are the pure `Usage` module. Going over the
 * plan's limit refuses nothing; it only pauses reports until the plan is raised (or the month ends).
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Calendar from "./Calendar.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { DirectoryStore, UsageStore } from "./Ports.js"
import { activeEntry, isMonth, type Usage, usageOf } from "./Usage.js"

export { activeEntry, type Usage } from "./Usage.js"

/**
 * Marks the member active in the month of `at` (see `Usage.activeEntry`); counted once per month.
 * Callers invoke it for counted live actions only, inside the action's transaction.
 */
export const recordActive = (
  workspaceId: Ids.WorkspaceId,
  projectId: Ids.ProjectId,
  userHash: Ids.UserHash,
  at: Date
): Effect.Effect<void, StorageError, UsageStore> =>
  Effect.flatMap(
    UsageStore,
    (usage) => Effect.asVoid(usage.markActive([activeEntry(workspaceId, projectId, userHash, at)]))
  )

export class Metering extends Context.Tag("@streaks/core/Metering")<Metering, {
  /** Usage of a month (default: the current UTC month by `Clock`), judged against the current plan. */
  readonly usage: (workspaceId: string, month?: string) => Effect.Effect<Usage, InvalidBody | NotFound | StorageError>
  /**
   * Whether reports are paused (`PLAN_LIMIT_EXCEEDED`): the month (default current) is over the
   * workspace's current plan limit. Raising the plan lifts the pause at once, and nothing tracked
   * meanwhile is lost because counting never stopped.
   */
  readonly reportsPaused: (
    workspaceId: string,
    month?: string
  ) => Effect.Effect<boolean, InvalidBody | NotFound | StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const store = yield* UsageStore

  const usage = (workspaceId: string, month?: string): Effect.Effect<Usage, InvalidBody | NotFound | StorageError> =>
    Effect.gen(function*() {
      if (month !== undefined && !isMonth(month)) {
        return yield* new InvalidBody({ message: "month must be YYYY-MM" })
      }
      const workspace = yield* directory.workspace(Ids.unsafe("WorkspaceId", workspaceId))
      if (Option.isNone(workspace)) return yield* new NotFound({ message: "workspace not found" })
      const m = month ?? Calendar.month(DateTime.toDateUtc(yield* DateTime.now))
      return usageOf(workspace.value.plan, m, yield* store.activeCount(workspace.value.id, m))
    })

  return Metering.of({
    usage,
    reportsPaused: (workspaceId, month) => Effect.map(usage(workspaceId, month), (u) => u.overLimit)
  })
})

export const layer: Layer.Layer<Metering, never, DirectoryStore | UsageStore> = Layer.effect(Metering, make)
