/**
 * Streak policies at work (docs/streak-semantics.md#streak-policies): changing a program's policy
 * (its streaks recomputed from their activity days, no event for the past), granting freezes to a
 * member, the ledger that explains a member's streak period by period, and the simulation of a
 * policy over the program's history (docs/operations.md#trying-a-policy-before-shipping-it).
 */
import { Array as Arr, Context, Effect, Either, Layer, Option, Stream } from "effect"
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"
import { type FreezeGrant, type Ledger, type Program, type Project, StreakKey, type StreakRow } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import * as Ids from "./Ids.js"
import {
  forgivenessOf,
  memberZone,
  notifiedOf,
  nowDate,
  programAndProjectIn,
  rowOf,
  summaryOf
} from "./internal/streakProgress.js"
import * as Policy from "./Policy.js"
import * as Simulation from "./Simulation.js"
import { SimulationReplay } from "./SimulationReplay.js"
import { IngestStore } from "./IngestStore.js"
import { DirectoryStore, MemberStore, type StreakHistory, StreakStore, Transactor } from "./Ports.js"
import * as Streak from "./Streak.js"

/** `GET …/members/{userHash}/ledger` (docs/streak-semantics.md#streak-policies). */
export interface LedgerAnswer {
  readonly programId: string
  readonly userHash: string
  readonly policy: ReturnType<typeof Policy.toJson>
  readonly current: number
  readonly best: number
  readonly freezes: number
  readonly periods: ReadonlyArray<Streak.LedgerPeriod>
}

export interface LedgerRange {
  /** First activity day shown (inclusive): periods that end before it are left out. */
  readonly from?: string | undefined
  /** Last activity day shown (inclusive): periods that start after it are left out. */
  readonly to?: string | undefined
}

/** Most freezes one grant may add. */
export const maxGrant = 10

/** Periods a ledger shows when no range is asked for. */
export const defaultPeriods = 8

/** Streaks recomputed per read of their days and write of their rows when a policy changes. */
const RECOMPUTE_BATCH = 500

/** Members a simulation reads per page of histories: it holds the pages in replay and two more. */
export const simulationPage = 2000

/** `POST …/simulations`: a whole policy, and the span of activity days to replay (both optional, inclusive). */
export interface SimulationRequest {
  readonly policy: unknown
  readonly from?: string | undefined
  readonly to?: string | undefined
}

/** What the program's live history comes to under its current policy and under the proposed one. */
export interface SimulationAnswer {
  readonly actual: Simulation.Outcome
  readonly proposed: Simulation.Outcome
}

export class StreakPolicies extends Context.Tag("@streaks/core/StreakPolicies")<StreakPolicies, {
  /**
   * Replaces a program's policy (validated: `InvalidBody` naming the field) and recomputes every
   * streak of the program from its activity days, in one transaction (the days of 500 streaks per
   * read); events that the new policy would have owed in the past are counted as sent.
   */
  readonly setPolicy: (
    programId: string,
    policy: unknown
  ) => Effect.Effect<Program, InvalidBody | NotFound | StorageError>
  /** Adds `count` (1..10) freezes to a member's bank, capped at the policy's `max`: the bank after. */
  readonly grantFreezes: (
    programId: string,
    userHash: string,
    count: unknown
  ) => Effect.Effect<{ readonly freezes: number }, InvalidBody | NotFound | StorageError>
  /** A member's streak explained period by period (default: the last 8 periods). */
  readonly ledger: (
    programId: string,
    userHash: string,
    range: LedgerRange
  ) => Effect.Effect<LedgerAnswer, InvalidBody | NotFound | StorageError>
  /**
   * Replays every live member's activity days (those in [from, to] when given) under the
   * program's policy and under `policy` (validated as `setPolicy` does), a page of members at a
   * time, with the `SimulationReplay` the layer was built with (by default in this thread);
   * writes nothing.
   */
  readonly simulate: (
    programId: string,
    request: SimulationRequest
  ) => Effect.Effect<SimulationAnswer, InvalidBody | NotFound | StorageError>
}>() {}

export type Requirements = DirectoryStore | StreakStore | MemberStore | IngestStore | Transactor

const invalid = (message: string) => new InvalidBody({ message })

const dateOf = (name: string, value: string | undefined): Either.Either<LocalDate | undefined, InvalidBody> => {
  if (value === undefined) return Either.right(undefined)
  try {
    return Either.right(Calendar.unsafeLocalDate(value))
  } catch {
    return Either.left(invalid(`${name} must be a date YYYY-MM-DD`))
  }
}

/** Adds a grant to a row's grants, one entry per day. */
const withGrant = (grants: ReadonlyArray<FreezeGrant>, day: LocalDate, count: number): ReadonlyArray<FreezeGrant> => {
  const same = grants.find((g) => g.day === day)
  return same === undefined
    ? [...grants, { day, count }]
    : grants.map((g) => (g.day === day ? { day, count: g.count + count } : g))
}

export const make: Effect.Effect<StreakPolicies["Type"], never, Requirements> = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const streaks = yield* StreakStore
  const members = yield* MemberStore
  const transactor = yield* Transactor
  const replay = yield* SimulationReplay

  const programAndProject = programAndProjectIn(directory)

  /** The member behind `userHash` (aliases resolved), their zone and their key on the program's ledger. */
  const memberOf = (program: Program, project: Project, userHash: string) =>
    Effect.gen(function*() {
      const hash = yield* EventInput.decodeUserHash("userHash", userHash)
      const [member] = yield* members.lookup([{ projectId: project.id, userHash: hash }])
      const zone = memberZone(member!.timezone, project)
      const key = new StreakKey({
        projectId: project.id,
        programId: program.id,
        userHash: member!.userHash,
        ledger: program.status
      })
      return { key, zone }
    })

  // The days of many keys at once, as ingest reads a late action's (one statement on Postgres).
  const history = (yield* IngestStore).history

  /** Rows recomputed under `policy` from their days, with everything due before `now` counted as sent. */
  const recomputed = (rows: ReadonlyArray<StreakRow>, policy: Policy.Policy, now: Date, program: Program) =>
    Effect.map(history(rows.map((row) => new StreakKey(keyFields(row)))), (days) =>
      rows.map((row, i) => {
        const summary = Streak.fromDays(days[i]!, row.timezone, policy, row.grants ?? [], forgivenessOf(row, program))
        const settled = Streak.settledAt(summary, row.timezone, now, policy)
        // A broken already sent for this run stays sent (a recomputation never announces it twice),
        // unless the past settles a later one (the run a repair carried on broke since).
        const sent = row.brokenNotifiedAfter
        const notified = sent !== undefined && sent === summary.lastActiveDay &&
            (settled.brokenAfter === undefined || settled.brokenAfter < sent)
          ? { ...settled, brokenAfter: sent }
          : settled
        return rowOf(row, summary, row.timezone, notified, now, policy, row)
      }))

  const setPolicy = (programId: string, input: unknown) =>
    Effect.gen(function*() {
      const decoded = Policy.decode(input)
      if (Either.isLeft(decoded)) return yield* invalid(decoded.left)
      const policy = decoded.right
      const now = yield* nowDate
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const updated = yield* directory.setProgramPolicy(
          Ids.unsafe("ProgramId", programId),
          policy,
          Policy.modeOf(policy)
        )
        if (Option.isNone(updated)) return yield* new NotFound({ message: "program not found" })
        const program = updated.value
        for (const ledger of ["live", "test"] as const satisfies ReadonlyArray<Ledger>) {
          const rows = yield* streaks.rows({ programId: program.id, ledger })
          for (let i = 0; i < rows.length; i += RECOMPUTE_BATCH) {
            yield* streaks.save(yield* recomputed(rows.slice(i, i + RECOMPUTE_BATCH), policy, now, program))
          }
        }
        return program
      }))
    })

  const grantFreezes = (programId: string, userHash: string, count: unknown) =>
    Effect.gen(function*() {
      if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > maxGrant) {
        return yield* invalid(`count must be an integer from 1 to ${maxGrant}`)
      }
      const now = yield* nowDate
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const { program, project } = yield* programAndProject(programId)
        const policy = Policy.of(program)
        const { key, zone } = yield* memberOf(program, project, userHash)
        const [row] = yield* streaks.lock([{ key, timezone: zone }])
        const day = Calendar.activityDay(now, zone, policy.dayStartHour)
        const grants = withGrant(row!.grants ?? [], day, count)
        // A grant is dated: replaying from the days puts it in its place among the periods.
        const summary = Streak.fromDays(yield* streaks.days(key), zone, policy, grants, forgivenessOf(row, program))
        yield* streaks.save([rowOf(key, summary, zone, notifiedOf(row!), now, policy, row)])
        return { freezes: Streak.evaluate(summary, now, zone, policy).freezes }
      }))
    })

  const ledger = (programId: string, userHash: string, range: LedgerRange) =>
    Effect.gen(function*() {
      const from = dateOf("from", range.from)
      const to = dateOf("to", range.to)
      if (Either.isLeft(from)) return yield* from.left
      if (Either.isLeft(to)) return yield* to.left
      if (from.right !== undefined && to.right !== undefined && from.right > to.right) {
        return yield* invalid("from must not be after to")
      }
      const { program, project } = yield* programAndProject(programId)
      const policy = Policy.of(program)
      const { key, zone } = yield* memberOf(program, project, userHash)
      const now = yield* nowDate
      const [row] = yield* streaks.rows({ keys: [key] })
      const days = yield* streaks.days(key)
      const grants = row?.grants ?? []
      const summary = row === undefined ? Streak.emptyOf(policy) : summaryOf(row, policy, program)
      const state = Streak.evaluate(summary, now, zone, policy)
      const all = Streak.ledger(days, grants, state.today, zone, policy, summary.forgiveness)
      const periods = from.right === undefined && to.right === undefined
        ? all.slice(-defaultPeriods)
        : all.filter((p) =>
          (from.right === undefined || p.end >= from.right) && (to.right === undefined || p.start <= to.right)
        )
      return {
        programId: program.id,
        userHash: key.userHash,
        policy: Policy.toJson(policy),
        current: state.current,
        best: state.best,
        freezes: state.freezes,
        periods
      }
    })

  const simulate = (programId: string, request: SimulationRequest) =>
    Effect.gen(function*() {
      const decoded = Policy.decode(request.policy)
      if (Either.isLeft(decoded)) return yield* invalid(decoded.left)
      const from = dateOf("from", request.from)
      const to = dateOf("to", request.to)
      if (Either.isLeft(from)) return yield* from.left
      if (Either.isLeft(to)) return yield* to.left
      if (from.right !== undefined && to.right !== undefined && from.right > to.right) {
        return yield* invalid("from must not be after to")
      }
      const { program } = yield* programAndProject(programId)
      const now = yield* nowDate
      const window = { from: from.right, to: to.right }
      const milestoneTargets = program.milestones.map((m) => m.target)
      const outages = Streak.windowsOf(program)
      const actual = { policy: Policy.of(program), milestoneTargets, now, window, outages }
      const proposed = { policy: decoded.right, milestoneTargets, now, window, outages }
      const page = (after: StreakHistory["userHash"] | undefined) =>
        streaks.histories({
          projectId: program.projectId,
          programId: program.id,
          ledger: "live",
          after,
          limit: simulationPage,
          from: from.right,
          to: to.right
        })
      const first = yield* page(undefined)
      // A program of one page has nothing to replay beside it: this thread, without a handover.
      if (first.length < simulationPage) {
        return { actual: Simulation.outcome(first, actual), proposed: Simulation.outcome(first, proposed) }
      }
      const next = (histories: ReadonlyArray<StreakHistory>) =>
        histories.length < simulationPage ? Option.none() : Option.some(histories[histories.length - 1]!.userHash)
      // Pages stream from the store while earlier ones are replayed: the pages in replay (the
      // replay's `concurrency`) and up to two read ahead, so the memory follows the page size,
      // not the program's.
      const pages = Stream.concat(
        Stream.make(first),
        Stream.paginateEffect(first[first.length - 1]!.userHash, (after) =>
          Effect.map(page(after), (histories) => [histories, next(histories)] as const))
      )
      const replayPage = (histories: ReadonlyArray<StreakHistory>) =>
        replay.outcomes(histories, [actual, proposed])
      const answer = yield* pages.pipe(
        // The page after a full last one is empty.
        Stream.filter(Arr.isNonEmptyReadonlyArray),
        Stream.buffer({ capacity: 1 }),
        Stream.mapEffect(replayPage, { concurrency: Math.max(1, replay.concurrency), unordered: true }),
        Stream.runFold(
          { actual: Simulation.empty, proposed: Simulation.empty } as SimulationAnswer,
          (answer, [a, p]) => ({
            actual: Simulation.combine(answer.actual, a!),
            proposed: Simulation.combine(answer.proposed, p!)
          })
        )
      )
      return answer
    })

  return StreakPolicies.of({ setPolicy, grantFreezes, ledger, simulate })
})

const keyFields = (row: StreakRow) => ({
  projectId: row.projectId,
  programId: row.programId,
  userHash: row.userHash,
  ledger: row.ledger
})

export const layer: Layer.Layer<StreakPolicies, never, Requirements> = Layer.effect(StreakPolicies, make)
