/**
 * Metering of active streakers (docs/api.md#get-usage): a member with at least one counted live action in
 * a UTC calendar month counts once for that month, per workspace. Going over the plan's limit
 * refuses nothing; it only pauses reports until the plan is raised (or the month ends).
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Calendar from "./Calendar.js"
import { planLimit, type Plan } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { DirectoryStore, type UsageEntry, UsageStore } from "./Ports.js"

/**
 * The usage entry of a counted live action: the member key `${projectId}:${userHash}` in the UTC
 * month of `at` (the action's `ts`, so a late action counts in its own month).
 */
export const activeEntry = (
  workspaceId: Ids.WorkspaceId,
  projectId: Ids.ProjectId,
  userHash: Ids.UserHash,
  at: Date
): UsageEntry => ({ workspaceId, month: Calendar.month(at), member: `${projectId}:${userHash}` })

/**
 * Marks the member active in the month of `at` (see `activeEntry`); counted once per month.
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

export interface Usage {
  /** "YYYY-MM" (UTC). */
  readonly month: string
  readonly plan: Plan
  readonly limit: number
  readonly activeStreakers: number
  /** More active streakers than the plan includes (reaching the limit exactly is not over it). */
  readonly overLimit: boolean
}

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

const monthPattern = /^\d{4}-(0[1-9]|1[0-2])$/

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const store = yield* UsageStore

  const usage = (workspaceId: string, month?: string): Effect.Effect<Usage, InvalidBody | NotFound | StorageError> =>
    Effect.gen(function*() {
      if (month !== undefined && !monthPattern.test(month)) {
        return yield* new InvalidBody({ message: "month must be YYYY-MM" })
      }
      const workspace = yield* directory.workspace(Ids.unsafe("WorkspaceId", workspaceId))
      if (Option.isNone(workspace)) return yield* new NotFound({ message: "workspace not found" })
      const m = month ?? Calendar.month(DateTime.toDateUtc(yield* DateTime.now))
      const activeStreakers = yield* store.activeCount(workspace.value.id, m)
      const limit = planLimit[workspace.value.plan]
      return { month: m, plan: workspace.value.plan, limit, activeStreakers, overLimit: activeStreakers > limit }
    })

  return Metering.of({
    usage,
    reportsPaused: (workspaceId, month) => Effect.map(usage(workspaceId, month), (u) => u.overLimit)
  })
})

export const layer: Layer.Layer<Metering, never, DirectoryStore | UsageStore> = Layer.effect(Metering, make)
