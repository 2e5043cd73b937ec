/**
 * Customer reports (spec §8, CONTRACT §11): overview, events and insights over a date range for
 * the programs a credential reaches. Over the plan limit they pause (200 with `paused: true`) and
 * show everything tracked meanwhile once the plan is raised: counting never stops.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Calendar from "./Calendar.js"
import * as Credentials from "./Credentials.js"
import { type Program, planLimit, StreakKey, type StreakRow } from "./Domain.js"
import { InvalidBody, type NotFound, type StorageError } from "./Errors.js"
import { ActionLog, DirectoryStore, StreakStore, UsageStore } from "./Ports.js"
import * as Streak from "./Streak.js"

/** `from`/`to` are inclusive UTC dates (default: the 30 days ending today); `programId` narrows. */
export interface Range {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly programId?: string | undefined
}

export interface Paused {
  readonly paused: true
  readonly reason: "PLAN_LIMIT_EXCEEDED"
  readonly workspaceId: string
  readonly usage: { readonly month: string; readonly plan: string; readonly limit: number; readonly activeStreakers: number }
}

interface Window {
  readonly from: string
  readonly to: string
}

export interface Overview {
  readonly paused: false
  readonly range: Window
  /** Distinct members with a counted live action in the range, over the covered programs. */
  readonly activeStreakers: number
  /** Counted live `streak_interaction`s (new active days) in the range. */
  readonly countedActions: number
  /** Members by current streak now (live ledger), in buckets "1", "2-6", "7-29", "30+". */
  readonly streakLengths: ReadonlyArray<{ readonly length: string; readonly members: number }>
}

export interface Events {
  readonly paused: false
  readonly range: Window
  /** Live-ledger actions per local date and event type; `counted` of them moved a streak. */
  readonly days: ReadonlyArray<{ readonly date: string; readonly eventType: string; readonly count: number; readonly counted: number }>
}

export interface Insights {
  readonly paused: false
  readonly range: Window
  /** Counted live actions by source labels, most first. */
  readonly sources: ReadonlyArray<{
    readonly source: string | null
    readonly externalService: string | null
    readonly integrationId: string | null
    readonly count: number
  }>
}

type ReportError = InvalidBody | NotFound | StorageError

export class Reports extends Context.Tag("@streaks/core/Reports")<Reports, {
  readonly overview: (principal: Credentials.Principal, range: Range) => Effect.Effect<Overview | Paused, ReportError>
  readonly events: (principal: Credentials.Principal, range: Range) => Effect.Effect<Events | Paused, ReportError>
  readonly insights: (principal: Credentials.Principal, range: Range) => Effect.Effect<Insights | Paused, ReportError>
}>() {}

const DATE = /^\d{4}-\d{2}-\d{2}$/
const maxDays = 366

const buckets = [
  { length: "1", min: 1, max: 1 },
  { length: "2-6", min: 2, max: 6 },
  { length: "7-29", min: 7, max: 29 },
  { length: "30+", min: 30, max: Infinity }
] as const

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const actions = yield* ActionLog
  const streaks = yield* StreakStore
  const usage = yield* UsageStore

  const window = (range: Range, now: Date): Effect.Effect<Window, InvalidBody> => {
    const today = Calendar.localDate(now, "UTC")
    const to = range.to ?? today
    const from = range.from ?? Calendar.addDays(to as Calendar.LocalDate, -29)
    if (!DATE.test(from) || !DATE.test(to)) return Effect.fail(new InvalidBody({ message: "from/to must be YYYY-MM-DD" }))
    const days = Calendar.daysBetween(from as Calendar.LocalDate, to as Calendar.LocalDate)
    if (days < 0) return Effect.fail(new InvalidBody({ message: "from must not be after to" }))
    if (days >= maxDays) return Effect.fail(new InvalidBody({ message: `a range covers at most ${maxDays} days` }))
    return Effect.succeed({ from, to })
  }

  // Reachable programs without the Credentials service: the same lookup `Credentials` does.
  const reachable = (principal: Credentials.Principal, range: Range) =>
    range.programId !== undefined
      ? Effect.map(Effect.provideService(Credentials.reach(principal, range.programId), DirectoryStore, directory), (r) => [r])
      : Effect.gen(function*() {
        const projects = yield* directory.projectsOfWorkspaces(principal.workspaceIds)
        if (projects.length === 0) return []
        const programs = yield* directory.programsOfProjects(projects.map((p) => p.id))
        const byId = new Map(projects.map((p) => [p.id, p]))
        return programs.flatMap((program) => {
          const project = byId.get(program.projectId)
          return project === undefined ? [] : [{ program, project }]
        })
      })

  /** The first workspace of the covered projects that is over its plan this month, if any. */
  const pause = (workspaceIds: ReadonlyArray<string>, now: Date): Effect.Effect<Option.Option<Paused>, StorageError> =>
    Effect.gen(function*() {
      const month = Calendar.month(now)
      for (const id of workspaceIds) {
        const workspace = yield* directory.workspace(id as Parameters<typeof directory.workspace>[0])
        if (Option.isNone(workspace)) continue
        const active = yield* usage.activeCount(workspace.value.id, month)
        const limit = planLimit[workspace.value.plan]
        if (active > limit) {
          return Option.some<Paused>({
            paused: true,
            reason: "PLAN_LIMIT_EXCEEDED",
            workspaceId: workspace.value.id,
            usage: { month, plan: workspace.value.plan, limit, activeStreakers: active }
          })
        }
      }
      return Option.none()
    })

  const report = <A>(
    principal: Credentials.Principal,
    range: Range,
    build: (programs: ReadonlyArray<Program>, window: Window, now: Date) => Effect.Effect<A, StorageError>
  ): Effect.Effect<A | Paused, ReportError> =>
    Effect.gen(function*() {
      const now = DateTime.toDateUtc(yield* DateTime.now)
      const w = yield* window(range, now)
      const covered = yield* reachable(principal, range)
      const workspaceIds = [...new Set(covered.map((r) => r.project.workspaceId))]
      const paused = yield* pause(workspaceIds, now)
      if (Option.isSome(paused)) return paused.value
      return yield* build(covered.map((r) => r.program), w, now)
    })

  const query = (programs: ReadonlyArray<Program>, w: Window) => ({
    programIds: programs.map((p) => p.id),
    from: Calendar.startOfDay(w.from as Calendar.LocalDate, "UTC"),
    to: Calendar.startOfDay(Calendar.addDays(w.to as Calendar.LocalDate, 1), "UTC"),
    ledger: "live" as const
  })

  /** Whether the row's member had an active day in the window (one range read at most). */
  const activeIn = (row: StreakRow, w: Window): Effect.Effect<boolean, StorageError> => {
    const last = row.lastActiveDay
    if (last === undefined || last < w.from) return Effect.succeed(false)
    if (last <= w.to) return Effect.succeed(true)
    const key = new StreakKey({ projectId: row.projectId, programId: row.programId, userHash: row.userHash, ledger: row.ledger })
    return Effect.map(
      streaks.daysBetween(key, w.from as Calendar.LocalDate, w.to as Calendar.LocalDate),
      (days) => days.length > 0
    )
  }

  const overview = (principal: Credentials.Principal, range: Range) =>
    report(principal, range, (programs, w, now) =>
      Effect.gen(function*() {
        const members = new Set<string>()
        const lengths = buckets.map(() => 0)
        for (const program of programs) {
          for (const row of yield* streaks.rowsOfProgram(program.id, "live")) {
            if (yield* activeIn(row, w)) members.add(`${row.projectId}:${row.userHash}`)
            const current = Streak.evaluate(
              { mode: "continuous", lastActiveDay: row.lastActiveDay, run: row.run, best: row.best },
              now,
              row.timezone
            ).current
            const bucket = buckets.findIndex((b) => current >= b.min && current <= b.max)
            if (bucket >= 0) lengths[bucket]! += 1
          }
        }
        const counts = programs.length === 0 ? [] : yield* actions.countsByDay(query(programs, w))
        return {
          paused: false as const,
          range: w,
          activeStreakers: members.size,
          countedActions: counts
            .filter((c) => c.eventType === "streak_interaction")
            .reduce((sum, c) => sum + c.counted, 0),
          streakLengths: buckets.map((b, i) => ({ length: b.length, members: lengths[i]! }))
        }
      }))

  const events = (principal: Credentials.Principal, range: Range) =>
    report(principal, range, (programs, w) =>
      Effect.map(programs.length === 0 ? Effect.succeed([]) : actions.countsByDay(query(programs, w)), (rows) => ({
        paused: false as const,
        range: w,
        days: [...rows]
          .sort((a, b) => a.date.localeCompare(b.date) || a.eventType.localeCompare(b.eventType))
          .map((r) => ({ date: r.date, eventType: r.eventType, count: r.count, counted: r.counted }))
      })))

  const insights = (principal: Credentials.Principal, range: Range) =>
    report(principal, range, (programs, w) =>
      Effect.map(programs.length === 0 ? Effect.succeed([]) : actions.sources(query(programs, w)), (rows) => ({
        paused: false as const,
        range: w,
        sources: [...rows]
          .sort((a, b) => b.count - a.count)
          .map((r) => ({
            source: r.source ?? null,
            externalService: r.externalService ?? null,
            integrationId: r.integrationId ?? null,
            count: r.count
          }))
      })))

  return Reports.of({ overview, events, insights })
})

export const layer: Layer.Layer<Reports, never, DirectoryStore | ActionLog | StreakStore | UsageStore> = Layer.effect(
  Reports,
  make
)
