/**
 * Reading a member's streak: the widget's `GET /v1/state`
 * (docs/api.md#read-a-members-state-get-v1state) and the customer REST member view
 * (docs/api.md#customer-rest-api-v1api), on the ledger that matches the program's status.
 */
import { Cause, Context, Effect, Either, Exit, Layer, Option, type Scope } from "effect"
import * as Calendar from "./Calendar.js"
import * as Credentials from "./Credentials.js"
import type { Milestone, Program, Project } from "./Domain.js"
import {
  type ForbiddenOrigin,
  type InvalidBody,
  type InvalidSiteKey,
  type InvalidWidgetKind,
  NotFound,
  type ServerTokenRequired,
  type StorageError
} from "./Errors.js"
import * as EventInput from "./EventInput.js"
import * as Ids from "./Ids.js"
import type { UserHash } from "./Ids.js"
import * as GroupCommit from "./internal/groupCommit.js"
import { browserAuth, programOf, resolveProject } from "./internal/ingestAuth.js"
import { memberZone, nowDate, summaryOf } from "./internal/streakProgress.js"
import { DirectoryStore, type Standing, type StandingRef } from "./Ports.js"
import { SecretBox } from "./SecretBox.js"
import * as Policy from "./Policy.js"
import { StateStore } from "./StateStore.js"
import * as Streak from "./Streak.js"

export interface StateRequest {
  readonly siteKey: string
  readonly userHash: string
  /** The event key (`event`, or its alias `kind`, resolved by the door). */
  readonly event: string
  readonly origin: string | undefined
  readonly serverToken: string | undefined
  /** A signed identity token (`X-Streak-Identity` or `identity`), revealing coupon and link values. */
  readonly identityToken: string | undefined
}

/** The body of `GET /v1/state`, exactly (docs/api.md#read-a-members-state-get-v1state). */
export interface StateBody {
  readonly meta: { readonly apiVersion: "1"; readonly isLive: boolean }
  readonly streak: {
    readonly mode: string
    readonly current: number
    readonly best: number
    readonly todayDone: boolean
    readonly pending: boolean
    /** Programs with a policy (docs/streak-semantics.md#streak-policies): freezes available now. */
    readonly freezes?: number
    /** Programs with a policy: the current period. */
    readonly period?: Streak.PeriodState
  }
  readonly week: ReadonlyArray<Streak.WeekEntry>
  readonly milestones: ReadonlyArray<{
    readonly id: string
    readonly target: number
    readonly msg: string
    readonly achieved: boolean
    readonly rewardType: string
    readonly rewardValue?: string
  }>
  readonly settings: {
    readonly theme: { readonly name: string }
    readonly position: string
    readonly mainMessage: string
  }
}

export interface StateAnswer {
  readonly body: StateBody
  /** Let through by the deprecated no-origin mode: the door adds `Deprecation: true`. */
  readonly deprecation: boolean
}

/** The customer REST member view (docs/api.md#customer-rest-api-v1api); an unknown member has zeros. */
export interface MemberStreak {
  readonly programId: string
  readonly userHash: string
  readonly current: number
  readonly best: number
  readonly todayDone: boolean
  readonly pending: boolean
  readonly lastActiveDate: string | null
  readonly isLive: boolean
  /** Programs with a policy (docs/streak-semantics.md#streak-policies). */
  readonly mode?: Policy.Mode
  readonly freezes?: number
  readonly period?: Streak.PeriodState
}

export type StateError =
  | InvalidBody
  | InvalidSiteKey
  | ForbiddenOrigin
  | ServerTokenRequired
  | InvalidWidgetKind

export class StateQuery extends Context.Tag("@streaks/core/StateQuery")<StateQuery, {
  /**
   * `GET /v1/state`: INVALID_BODY (bad userHash), INVALID_SITE_KEY, the browser rule of `/v1/e`
   * (FORBIDDEN_ORIGIN, SERVER_TOKEN_REQUIRED unless legacy mode), INVALID_WIDGET_KIND, in that order.
   * Its storage read shares the batch's. Time is the `Clock` in context when the service was made.
   */
  readonly state: (request: StateRequest) => Effect.Effect<StateAnswer, StateError | StorageError>
  /** The project of a siteKey, else INVALID_SITE_KEY: for a door that needs it before `stateOf`. */
  readonly resolveProject: (siteKey: string) => Effect.Effect<Project, InvalidSiteKey | StorageError>
  /**
   * `state` for a project the door already resolved (its `siteKey` is not read again): the same
   * checks in the same order, the siteKey's aside.
   */
  readonly stateOf: (
    project: Project,
    request: Omit<StateRequest, "siteKey">
  ) => Effect.Effect<StateAnswer, StateError | StorageError>
  /** A member's streak in a program the caller already reaches; NotFound for an unknown program. */
  readonly memberStreak: (
    programId: string,
    userHash: string
  ) => Effect.Effect<MemberStreak, InvalidBody | NotFound | StorageError>
}>() {}

const API_VERSION = "1" as const

export type Requirements = DirectoryStore | StateStore | SecretBox

/**
 * Reads that arrive together share one `StateStore.standing` (as actions share a transaction
 * in `Ingest`): while a read is out, the next ones gather, so a busy widget costs one statement per
 * batch rather than one per request. A lone read waits for nothing. Reads do not join a
 * transaction their caller has open.
 */
export interface ReadOptions {
  /**
   * Batches read at the same time (default 1: batches that each take whatever waits are smaller
   * for the same fixed cost). See `minBatchBeside`.
   */
  readonly workers?: number
  /**
   * With more than one worker, the fewest waiting reads for which a batch starts beside one in
   * flight (default 1: at once), as `Ingest.BatchOptions.minBatchBeside`. The reference server
   * reads two batches at once from 24 waiting reads (docs/performance.md).
   */
  readonly minBatchBeside?: number
  /** Most reads in one batch (default 100). */
  readonly maxBatch?: number
}

interface Read {
  readonly ref: StandingRef
  readonly from: Calendar.LocalDate
  readonly to: Calendar.LocalDate
}

const earliest = (reads: ReadonlyArray<Read>) => reads.reduce((d, r) => (r.from < d ? r.from : d), reads[0]!.from)
const latest = (reads: ReadonlyArray<Read>) => reads.reduce((d, r) => (r.to > d ? r.to : d), reads[0]!.to)

export const make = (options: ReadOptions = {}): Effect.Effect<StateQuery["Type"], never, Requirements | Scope.Scope> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const store = yield* StateStore
    const box = yield* SecretBox

    // A batch reads the union of its reads' ranges (they differ only across midnight) and gives
    // each read the days of its own range. A storage failure fails the whole batch (the store is
    // down for all of them); a defect (a row that cannot be read, say) is retried one read at a
    // time, so that it fails only the read it belongs to.
    const readAll = (reads: ReadonlyArray<Read>): Effect.Effect<ReadonlyArray<Exit.Exit<Standing, StorageError>>> =>
      store.standing(reads.map((r) => r.ref), earliest(reads), latest(reads)).pipe(
        Effect.map((standings) =>
          standings.map((s, i) => {
            const { from, to } = reads[i]!
            return Exit.succeed(
              s.days.every((d) => d >= from && d <= to) ? s : { ...s, days: s.days.filter((d) => d >= from && d <= to) }
            )
          })
        ),
        Effect.catchAllCause((cause) =>
          reads.length > 1 && Cause.isDie(cause) && !Cause.isFailure(cause)
            ? Effect.forEach(reads, (r) => Effect.map(readAll([r]), (exits) => exits[0]!))
            : Effect.succeed(reads.map(() => Exit.failCause(cause)))
        )
      )
    const standing = yield* GroupCommit.make(readAll, {
      workers: options.workers ?? 1,
      minBatchBeside: options.minBatchBeside,
      maxBatch: options.maxBatch ?? 100
    })

    const clock = yield* Effect.clock

    /**
     * The reads of the member behind `userHash` (aliases resolved): their zone, their streak on the
     * program's ledger, their days around today and their achievements, in one storage read.
     */
    const readOf = (project: Project, program: Program, userHash: UserHash, now: Date): Read => {
      // Today in any zone is within a day of today in UTC, and its ISO week within six days of
      // today: this range holds the week the widget shows, whatever the member's zone.
      const utcToday = Calendar.localDate(now, "UTC")
      return {
        ref: { projectId: project.id, programId: program.id, ledger: program.status, userHash },
        from: Calendar.addDays(utcToday, -7),
        to: Calendar.addDays(utcToday, 7)
      }
    }

    const evaluate = (project: Project, program: Program, found: Standing, now: Date) => {
      const zone = memberZone(found.member.timezone, project)
      const row = Option.getOrUndefined(found.row)
      const policy = Policy.of(program)
      const summary = row === undefined ? Streak.emptyOf(policy) : summaryOf(row, policy, program)
      return { summary, zone, evaluated: Streak.evaluate(summary, now, zone, policy) }
    }

    const read = (project: Project, program: Program, userHash: UserHash) =>
      Effect.flatMap(
        nowDate,
        (now) =>
          Effect.map(
            standing(readOf(project, program, userHash, now)),
            (found) => evaluate(project, program, found, now)
          )
      )

    /**
     * Coupon and link values are revealed only to the member they belong to (a valid identity token
     * for the requested id or the member it is linked to) and only once earned; message values are
     * shown to everyone, they are the widget's copy.
     */
    const identified = (project: Project, token: string | undefined, ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (token === undefined) return false
        const secret = box.open(project.signingSecretSealed)
        if (secret === undefined) return false
        for (const userHash of new Set(ids)) {
          if (yield* Credentials.verifyIdentityToken(token, secret, { userHash, siteKey: project.siteKey })) return true
        }
        return false
      })

    const milestoneView = (m: Milestone, achieved: boolean, reveal: boolean) => ({
      id: m.id,
      target: m.target,
      msg: m.msg,
      achieved,
      rewardType: m.rewardType,
      ...(m.rewardValue !== undefined && (m.rewardType === "message" || (achieved && reveal))
        ? { rewardValue: m.rewardValue }
        : {})
    })

    const body = (
      program: Program,
      found: Standing,
      { evaluated, summary, zone }: ReturnType<typeof evaluate>,
      reveal: boolean
    ): StateBody => {
      const achieved = new Set<string>(found.achieved)
      const days = new Set<string>(found.days)
      const streak = {
        mode: evaluated.mode,
        current: evaluated.current,
        best: evaluated.best,
        todayDone: evaluated.todayDone,
        pending: evaluated.pending
      }
      // A program without a policy answers exactly as before policies existed
      // (docs/streak-semantics.md#streak-policies).
      const policy = program.policy
      const weekStart = Calendar.weekStart(evaluated.today)
      const pauses = summary.forgiveness?.pauses ?? []
      const week = policy === undefined
        ? Streak.week(evaluated.today, days, undefined, [], pauses)
        : Streak.week(
          evaluated.today,
          days,
          policy,
          Streak.frozenDays(summary, days, weekStart, Calendar.addDays(evaluated.today, -1), zone, policy),
          pauses
        )
      return {
        meta: { apiVersion: API_VERSION, isLive: program.status === "live" },
        streak: policy === undefined ? streak : { ...streak, freezes: evaluated.freezes, period: evaluated.period },
        week,
        milestones: program.milestones.map((m) => milestoneView(m, achieved.has(m.id), reveal)),
        settings: {
          theme: { name: program.settings.theme.name },
          position: program.settings.position,
          mainMessage: program.settings.mainMessage
        }
      }
    }

    /** Whether the answer holds an earned coupon or link value, which only its member may see. */
    const holdsSecrets = (program: Program, found: Standing) =>
      program.milestones.some((m) =>
        m.rewardType !== "message" && m.rewardValue !== undefined && found.achieved.includes(m.id)
      )

    /** The answer from the member's standing; the body is computed in an `Effect.sync`, so a row
     * the calculus cannot read is a defect of this read alone. */
    const answer = (
      project: Project,
      program: Program,
      userHash: UserHash,
      deprecation: boolean,
      now: Date,
      identityToken: string | undefined,
      found: Standing
    ): Effect.Effect<StateAnswer, StorageError> => {
      const bodyOf = (reveal: boolean) =>
        Effect.sync((): StateAnswer => ({
          body: body(program, found, evaluate(project, program, found, now), reveal),
          deprecation
        }))
      return holdsSecrets(program, found)
        ? Effect.flatMap(identified(project, identityToken, [userHash, found.member.userHash]), bodyOf)
        : bodyOf(false)
    }

    // Plain `flatMap`s over checks that are values: this runs on every widget load.
    const stateOf = (project: Project, request: Omit<StateRequest, "siteKey">) =>
      Effect.suspend((): Effect.Effect<StateAnswer, StateError | StorageError> => {
        const userHash = EventInput.checkUserHash("userHash", request.userHash)
        if (Either.isLeft(userHash)) return Effect.fail(userHash.left)
        const access = browserAuth(project, request.origin, request.serverToken)
        if (Either.isLeft(access)) return Effect.fail(access.left)
        return Effect.flatMap(programOf(directory, project, request.event), (program) => {
          const now = new Date(clock.unsafeCurrentTimeMillis())
          return Effect.flatMap(
            standing(readOf(project, program, userHash.right, now)),
            (found) =>
              answer(project, program, userHash.right, access.right.deprecation, now, request.identityToken, found)
          )
        })
      })

    const state = (request: StateRequest) =>
      Effect.suspend((): Effect.Effect<StateAnswer, StateError | StorageError> => {
        const userHash = EventInput.checkUserHash("userHash", request.userHash)
        if (Either.isLeft(userHash)) return Effect.fail(userHash.left)
        return Effect.flatMap(resolveProject(directory, request.siteKey), (project) => stateOf(project, request))
      })

    const memberStreak = (programId: string, userHash: string) =>
      Effect.gen(function*() {
        const hash = yield* EventInput.decodeUserHash("userHash", userHash)
        const program = Option.getOrUndefined(yield* directory.program(Ids.unsafe("ProgramId", programId)))
        const project = program && Option.getOrUndefined(yield* directory.project(program.projectId))
        if (program === undefined || project === undefined) return yield* new NotFound({ message: "program not found" })
        const { evaluated, summary } = yield* read(project, program, hash)
        return {
          programId: program.id,
          userHash: hash,
          current: evaluated.current,
          best: evaluated.best,
          todayDone: evaluated.todayDone,
          pending: evaluated.pending,
          lastActiveDate: summary.lastActiveDay ?? null,
          isLive: program.status === "live",
          ...(program.policy === undefined
            ? {}
            : { mode: evaluated.mode, freezes: evaluated.freezes, period: evaluated.period })
        }
      })

    return StateQuery.of({
      resolveProject: (siteKey) => resolveProject(directory, siteKey),
      state,
      stateOf,
      memberStreak
    })
  })

/** `StateQuery` with the default read batching. */
export const layer: Layer.Layer<StateQuery, never, Requirements> = Layer.scoped(StateQuery, make())

/** `StateQuery` with chosen read batching. */
export const layerWith = (options: ReadOptions): Layer.Layer<StateQuery, never, Requirements> =>
  Layer.scoped(StateQuery, make(options))
