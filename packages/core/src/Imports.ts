/**
 * History import (docs/operations.md#bringing-your-history): past actions of a program, one per
 * line (NDJSON, or CSV with a header), checked as ingest checks them, loaded in large batches
 * through `ImportStore`, then every touched member's streak, best and milestones recomputed once
 * from their days with the pure calculus. Nothing is announced for the past: no outbox message.
 */
import { Context, Duration, Effect, Either, Fiber, Layer, Option, Schedule, Stream } from "effect"
import * as Calendar from "./Calendar.js"
import { Achievement, type Program, type Project, StreakKey, type StreakRow, unsafeMake } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import * as Ids from "./Ids.js"
import type { UserHash } from "./Ids.js"
import { type ImportedAction, type ImportJob, type ImportRejection, ImportStore, maxRejections } from "./ImportStore.js"
import { IngestStore } from "./IngestStore.js"
import { forgivenessOf, memberZone, nowDate, programAndProjectIn, rowOf } from "./internal/streakProgress.js"
import * as Policy from "./Policy.js"
import { AchievementStore, DirectoryStore, type MemberZone, MemberStore, StreakStore, Transactor } from "./Ports.js"
import * as Streak from "./Streak.js"

export type Format = "ndjson" | "csv"

/** Lines per batch written to the store (one transaction, one COPY on Postgres). */
export const defaultBatchLines = 5000

/** A line longer than an action's body may be (64 KiB) is refused as ingest refuses such a body. */
export const maxLineChars = 64 * 1024

/** A batch of lines once checked. */
interface CheckedBatch {
  readonly accepted: ReadonlyArray<Extract<Checked, { _tag: "Action" }>>
  readonly rejected: ReadonlyArray<ImportRejection>
  readonly received: number
  readonly lastLine: number
}

/** A checked batch with its members resolved and its actions dated: what the store writes. */
interface PreparedBatch {
  readonly checked: Omit<CheckedBatch, "accepted">
  readonly actions: ReadonlyArray<ImportedAction>
  /** The zones its lines change, by member. */
  readonly zones: ReadonlyMap<UserHash, MemberZone>
  /** The identities it stores. */
  readonly identities: ReadonlySet<string>
  readonly duplicates: number
  readonly touched: ReadonlyArray<UserHash>
}

/** Members recomputed per transaction at the end of an import. */
const RECOMPUTE_BATCH = 2000

/** Pages of members recomputed at once, on as many connections. */
const RECOMPUTE_CONCURRENCY = 2

/** How long a running import's owner may stay silent before the job counts as abandoned. */
export const defaultLease = Duration.seconds(30)

export interface Options {
  /** See `defaultLease`; the owner renews its heartbeat six times per lease. */
  readonly lease?: Duration.DurationInput | undefined
}

/** The fields a CSV header may name; any other column is ignored. */
export const csvFields = ["userHash", "ts", "tz", "idempotencyKey", "meta"] as const

/** A line as read: its number in the input (from 1) and its text. */
export interface Line {
  readonly line: number
  readonly text: string
}

/** How one import runs. */
export interface RunOptions {
  readonly format: Format
  /** Names the input so that an interrupted import of it resumes (the CLI: a digest of the file). */
  readonly source?: string | undefined
  readonly batchLines?: number | undefined
  /**
   * Checks applied to a parsed line before the schema (the doors' per-part byte limits): the error
   * code to reject it with, if any.
   */
  readonly checkLine?: ((u: unknown) => string | undefined) | undefined
  /** Called after each committed batch with the job as it stands (progress output). */
  readonly onProgress?: ((job: ImportJob) => Effect.Effect<void>) | undefined
}

export class Imports extends Context.Tag("@streaks/core/Imports")<Imports, {
  /**
   * Starts an import of `programId` (the caller has checked its reach), or resumes the running one
   * of the same non-empty `source`: the job, whose `committedLine` says where reading resumes.
   */
  readonly start: (
    programId: string,
    source?: string | undefined
  ) => Effect.Effect<ImportJob, NotFound | StorageError>
  /**
   * Loads `lines` into the job in batches (lines up to its `committedLine` are skipped: they are
   * in), each committed with the job's progress. A failure of the input or the store marks the
   * job failed.
   */
  readonly load: <E>(
    job: ImportJob,
    lines: Stream.Stream<Line, E>,
    options: RunOptions
  ) => Effect.Effect<ImportJob, E | NotFound | StorageError>
  /** Recomputes every member the job touched and marks it finished (failed if that fails). */
  readonly finish: (job: ImportJob) => Effect.Effect<ImportJob, NotFound | StorageError>
  /** The job of a program; NotFound when it is another program's or unknown. */
  readonly get: (programId: string, importId: string) => Effect.Effect<ImportJob, NotFound | StorageError>
  /**
   * Claims the running imports whose owner's heartbeat is older than the lease (the process
   * died): one whose lines were all read is recomputed and finished here; any other is
   * `interrupted`. Answers the claimed jobs as they ended.
   */
  readonly recover: Effect.Effect<ReadonlyArray<ImportJob>, StorageError>
}>() {}

export type Requirements =
  | DirectoryStore
  | ImportStore
  | IngestStore
  | MemberStore
  | StreakStore
  | AchievementStore
  | Transactor

const notFound = () => new NotFound({ message: "import not found" })

/** Splits a chunked text into lines numbered from 1 (`\n` or `\r\n`). */
export const lines = <E>(text: Stream.Stream<string, E>): Stream.Stream<Line, E> =>
  text.pipe(
    Stream.splitLines,
    Stream.zipWithIndex,
    Stream.map(([text, i]) => ({ line: i + 1, text }))
  )

/** The cells of one CSV line (RFC 4180 quoting within the line; `""` is a quote). */
export const csvCells = (text: string): Array<string> => {
  const cells: Array<string> = []
  let cell = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"") {
        if (text[i + 1] === "\"") {
          cell += "\""
          i++
        } else quoted = false
      } else cell += c
    } else if (c === "\"" && cell === "") quoted = true
    else if (c === ",") {
      cells.push(cell)
      cell = ""
    } else cell += c
  }
  cells.push(cell)
  return cells
}

/** The object of a CSV line under `header` (empty cells are absent; `meta` is JSON text). */
export const csvObject = (header: ReadonlyArray<string>, text: string): Either.Either<unknown, InvalidBody> => {
  const cells = csvCells(text)
  const o: Record<string, unknown> = {}
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!
    const cell = cells[i]
    if (cell === undefined || cell === "" || !(csvFields as ReadonlyArray<string>).includes(name)) continue
    if (name === "meta") {
      try {
        o.meta = JSON.parse(cell)
      } catch {
        return Either.left(new InvalidBody({ message: "meta: must be a JSON object" }))
      }
    } else o[name] = cell
  }
  return Either.right(o)
}

/** The parsed value of an NDJSON line. */
const jsonObject = (text: string): Either.Either<unknown, InvalidBody> => {
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left(new InvalidBody({ message: "body: must be a JSON object with the documented fields" }))
  }
}

/** A checked line: the action, or the code it is refused with. */
export type Checked =
  | { readonly _tag: "Action"; readonly line: number; readonly action: EventInput.Action & { readonly ts: Date } }
  | { readonly _tag: "Rejected"; readonly rejection: ImportRejection }

/**
 * One line checked as ingest checks an action of the customer REST door, `ts` required (a past
 * action has a date). Pure: `now` is given.
 */
export const checkLine = (
  parsed: Either.Either<unknown, InvalidBody>,
  line: number,
  now: Date,
  limits?: (u: unknown) => string | undefined
): Checked => {
  const rejected = (error: string): Checked => ({ _tag: "Rejected", rejection: { line, error } })
  if (Either.isLeft(parsed)) return rejected(parsed.left.code)
  const limited = limits?.(parsed.right)
  if (limited !== undefined) return rejected(limited)
  const checked = EventInput.checkCountAction(parsed.right, now)
  if (Either.isLeft(checked)) return rejected(checked.left.code)
  const action = checked.right
  if (action.ts === undefined) return rejected("INVALID_BODY")
  return { _tag: "Action", line, action: action as EventInput.Action & { readonly ts: Date } }
}

/** The identity of an imported action: its idempotency key, else its member as sent and its instant. */
export const identityOf = (action: EventInput.Action & { readonly ts: Date }): string =>
  action.idempotencyKey !== undefined
    ? `k:${action.idempotencyKey}`
    : `t:${action.ts.toISOString()}:${action.userHash}`

export const makeWith = (options: Options): Effect.Effect<Imports["Type"], never, Requirements> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const store = yield* ImportStore
    const history = (yield* IngestStore).history
    const members = yield* MemberStore
    const streaks = yield* StreakStore
    const achievements = yield* AchievementStore
    const transactor = yield* Transactor

    const programAndProject = programAndProjectIn(directory)

    const start = (programId: string, source?: string) =>
      Effect.gen(function*() {
        const { program, project } = yield* programAndProject(programId)
        if (source !== undefined && source !== "") {
          const resumable = yield* store.resumable(program.id, source)
          if (Option.isSome(resumable) && (yield* store.resume(resumable.value.id, yield* nowDate))) {
            const resumed = yield* store.get(resumable.value.id)
            if (Option.isSome(resumed)) return resumed.value
          }
        }
        const now = yield* nowDate
        const job: ImportJob = {
          id: yield* Ids.make("ImportId"),
          projectId: project.id,
          programId: program.id,
          source: source ?? "",
          status: "running",
          received: 0,
          imported: 0,
          duplicates: 0,
          rejected: [],
          committedLine: 0,
          startedAt: now,
          heartbeatAt: now,
          loaded: false
        }
        yield* store.create(job)
        return job
      })

    /** One batch of lines checked (pure, no I/O): its accepted actions and its rejections. */
    const checkBatch = (
      batch: ReadonlyArray<Line>,
      parse: (text: string) => Either.Either<unknown, InvalidBody>,
      options: RunOptions,
      now: Date
    ): CheckedBatch => {
      const rejected: Array<ImportRejection> = []
      const accepted: Array<Extract<Checked, { _tag: "Action" }>> = []
      let received = 0
      for (const l of batch) {
        if (l.text.trim() === "") continue
        received++
        const checked = l.text.length > maxLineChars
          ? { _tag: "Rejected" as const, rejection: { line: l.line, error: "PAYLOAD_TOO_LARGE" } }
          : checkLine(parse(l.text), l.line, now, options.checkLine)
        if (checked._tag === "Rejected") rejected.push(checked.rejection)
        else accepted.push(checked)
      }
      return { accepted, rejected, received, lastLine: batch[batch.length - 1]!.line }
    }

    /**
     * Resolves the members of a checked batch and dates its actions: the batch as the store will
     * write it, but for its rejections, which depend on the job's count when it is written. Runs
     * while the batch before it (`previous`, not committed yet) is written, so the reads cannot see
     * that batch: its new identities and the zones its lines set are taken from `previous` instead.
     */
    const prepareBatch = (
      program: Program,
      project: Project,
      checked: CheckedBatch,
      previous: PreparedBatch | undefined
    ) =>
      Effect.gen(function*() {
        // Lines whose identity is stored already, or came earlier in the batch, change nothing (a
        // replayed action in ingest moves no day and no zone): they are counted and set aside first.
        const identities = checked.accepted.map((a) => identityOf(a.action))
        // Both reads at once: they depend on the lines alone.
        const [known, all] = checked.accepted.length === 0 ? [[], []] : yield* Effect.all([
          store.known(project.id, program.id, identities),
          members.lookup(checked.accepted.map((a) => ({ projectId: project.id, userHash: a.action.userHash })))
        ], { concurrency: 2 })
        const seen = new Set<string>()
        const fresh = checked.accepted.map((_, i) => {
          const identity = identities[i]!
          if (known[i] === true || seen.has(identity) || previous?.identities.has(identity) === true) return false
          seen.add(identity)
          return true
        })
        const accepted = checked.accepted.filter((_, i) => fresh[i])
        const acceptedIdentities = identities.filter((_, i) => fresh[i])
        const found = all.filter((_, i) => fresh[i])
        // A duplicate's member is still recomputed at the end: an import that stopped before its
        // recomputation leaves members that only a later run of the same lines can reach.
        const touched = [...new Set(all.filter((_, i) => !fresh[i]).map((m) => m.userHash))]
        const policy = Policy.of(program)
        // Each line's zone is its tz (which becomes the member's), else the member's, else the
        // project's; the zones the batch before set count as the members' (it is not committed yet).
        const zones = new Map<UserHash, string>()
        const changed = new Map<UserHash, MemberZone>()
        const actions: Array<ImportedAction> = accepted.map((a, i) => {
          const member = found[i]!
          const tz = a.action.tz
          const known = zones.get(member.userHash) ?? previous?.zones.get(member.userHash)?.timezone
          const stored = known === undefined ? member.timezone : Option.some(known)
          if (tz !== undefined && Option.getOrUndefined(stored) !== tz) {
            zones.set(member.userHash, tz)
            changed.set(member.userHash, { projectId: project.id, userHash: member.userHash, timezone: tz })
          }
          const zone = tz ?? memberZone(stored, project)
          return {
            userHash: member.userHash,
            identity: acceptedIdentities[i]!,
            day: Calendar.activityDay(a.action.ts, zone, policy.dayStartHour)
          }
        })
        return {
          // Without its lines, which the batch no longer needs.
          checked: { rejected: checked.rejected, received: checked.received, lastLine: checked.lastLine },
          actions,
          zones: changed,
          identities: new Set(acceptedIdentities),
          duplicates: checked.accepted.length - accepted.length,
          touched
        } satisfies PreparedBatch
      })

    /** Writes a prepared batch with the job's progress (`job`: as it stands before it). */
    const writeBatch = (job: ImportJob, program: Program, project: Project, prepared: PreparedBatch) =>
      store.load({
        importId: job.id,
        projectId: project.id,
        programId: program.id,
        actions: prepared.actions,
        zones: [...prepared.zones.values()],
        received: prepared.checked.received,
        duplicates: prepared.duplicates,
        touched: prepared.touched,
        rejected: prepared.checked.rejected.slice(0, Math.max(0, maxRejections - job.rejected.length)),
        committedLine: prepared.checked.lastLine
      })

    const lease = Duration.decode(options.lease ?? defaultLease)
    /** `work` with the job's heartbeat renewed alongside it, so that no other process claims it. */
    const beating = <A, E, R>(id: string, work: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.zipRight(
        Effect.forkScoped(
          Effect.flatMap(nowDate, (now) => Effect.ignore(store.heartbeat(id, now))).pipe(
            Effect.delay(Duration.unsafeDivide(lease, 6)),
            Effect.repeat(Schedule.spaced(Duration.unsafeDivide(lease, 6)))
          )
        ),
        work
      ))

    const failed = (job: ImportJob) =>
      Effect.flatMap(nowDate, (now) => Effect.ignore(store.finish(job.id, "failed", now)))

    const load = <E>(job: ImportJob, input: Stream.Stream<Line, E>, options: RunOptions) =>
      beating(
        job.id,
        Effect.scoped(Effect.gen(function*() {
          const { program, project } = yield* programAndProject(job.programId)
          let header: ReadonlyArray<string> | undefined
          let current = job
          let pending: PreparedBatch | undefined
          let writing: Fiber.RuntimeFiber<void, StorageError> | undefined
          const write = (prepared: PreparedBatch) =>
            Effect.gen(function*() {
              current = yield* writeBatch(current, program, project, prepared)
              if (options.onProgress !== undefined) yield* options.onProgress(current)
            })
          const parse = (text: string) => options.format === "ndjson" ? jsonObject(text) : csvObject(header ?? [], text)
          yield* input.pipe(
            // A CSV header is read even when resuming; it is not an action.
            Stream.filter((l) => {
              if (options.format === "csv" && header === undefined) {
                if (l.text.trim() === "") return false
                header = csvCells(l.text).map((h) => h.trim())
                return false
              }
              return l.line > job.committedLine
            }),
            Stream.grouped(options.batchLines ?? defaultBatchLines),
            Stream.mapEffect((chunk) => Effect.map(nowDate, (now) => checkBatch([...chunk], parse, options, now))),
            // The next batch is read and checked while the store writes this one.
            Stream.buffer({ capacity: 1 }),
            // Each batch's reads run while the batch before it is written. Its own write starts as
            // soon as that one has committed, without waiting for the next batch, so a pause in the
            // input holds back no prepared batch; the writes stay one after the other, in line
            // order, so that the committed line is always a true resume point.
            Stream.runForEach((checked) =>
              Effect.gen(function*() {
                const prepared = yield* prepareBatch(program, project, checked, pending)
                if (writing !== undefined) yield* Fiber.join(writing)
                writing = yield* Effect.forkScoped(write(prepared))
                pending = prepared
              })
            )
          )
          if (writing !== undefined) yield* Fiber.join(writing)
          yield* store.loaded(job.id)
          return { ...current, loaded: true }
        }))
      ).pipe(Effect.tapErrorCause(() => failed(job)))

    /** One page of touched members recomputed from their days, in one transaction. */
    const recompute = (program: Program, project: Project, page: ReadonlyArray<UserHash>, now: Date) =>
      transactor.withTransaction(Effect.gen(function*() {
        const policy = Policy.of(program)
        const found = yield* members.lookup(page.map((userHash) => ({ projectId: project.id, userHash })))
        const keys = page.map((userHash) =>
          new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger: "live" })
        )
        const zones = found.map((m) => memberZone(m.timezone, project))
        const locked = yield* streaks.lock(keys.map((key, i) => ({ key, timezone: zones[i]! })))
        const [days, achieved] = yield* Effect.all([history(keys), achievements.achieved(keys)])
        const rows: Array<StreakRow> = []
        const reached: Array<Achievement> = []
        keys.forEach((key, i) => {
          const row = locked[i]!
          const zone = zones[i]!
          // With the member's repairs and pauses and the program's windows, which the row keeps.
          const summary = Streak.fromDays(days[i]!, zone, policy, row.grants ?? [], forgivenessOf(row, program))
          // Everything due before now counts as sent: the past is not announced.
          const settled = Streak.settledAt(summary, zone, now, policy)
          const sent = row.brokenNotifiedAfter
          const notified = sent !== undefined && sent === summary.lastActiveDay &&
              (settled.brokenAfter === undefined || settled.brokenAfter < sent)
            ? { ...settled, brokenAfter: sent }
            : settled
          rows.push(rowOf(key, summary, zone, notified, now, policy, row))
          const best = Streak.evaluate(summary, now, zone, policy).best
          const had = new Set<string>(achieved[i]!.map((a) => a.milestoneId))
          for (const m of program.milestones) {
            if (m.target <= best && !had.has(m.id)) {
              reached.push(unsafeMake(Achievement, {
                projectId: key.projectId,
                programId: key.programId,
                userHash: key.userHash,
                ledger: key.ledger,
                milestoneId: m.id,
                achievedAt: now
              }))
            }
          }
        })
        yield* streaks.save(rows)
        if (reached.length > 0) yield* store.achieve(reached)
      }))

    const finish = (job: ImportJob) =>
      beating(
        job.id,
        Effect.gen(function*() {
          const { program, project } = yield* programAndProject(job.programId)
          const now = yield* nowDate
          // Pages are disjoint sets of members: two recompute at once, each in its own transaction,
          // while the next page is read.
          yield* Stream.paginateEffect(undefined as UserHash | undefined, (after) =>
            Effect.map(store.members(job.id, after, RECOMPUTE_BATCH), (page) =>
              [
                page,
                page.length < RECOMPUTE_BATCH ? Option.none() : Option.some(page[page.length - 1])
              ] as const)).pipe(
              Stream.filter((page) =>
                page.length > 0
              ),
              Stream.mapEffect((page) => recompute(program, project, page, now), {
                concurrency: RECOMPUTE_CONCURRENCY,
                unordered: true
              }),
              Stream.runDrain
            )
          const at = yield* nowDate
          yield* store.finish(job.id, "finished", at)
          return Option.getOrElse(
            yield* store.get(job.id),
            () => ({ ...job, status: "finished" as const, finishedAt: at })
          )
        })
      ).pipe(Effect.tapErrorCause(() => failed(job)))

    const get = (programId: string, importId: string) =>
      Effect.gen(function*() {
        const job = yield* store.get(importId)
        if (Option.isNone(job) || job.value.programId !== programId) return yield* notFound()
        return job.value
      })

    const recover = Effect.gen(function*() {
      const now = yield* nowDate
      const claimed = yield* store.claimStale(new Date(now.getTime() - Duration.toMillis(lease)), now)
      // A job whose program is gone stays failed, as `finish` leaves it; the others go on.
      return yield* Effect.forEach(claimed, (job) =>
        job.status !== "running" ? Effect.succeed(job) : finish(job).pipe(
          Effect.catchTag("NotFound", () => Effect.map(store.get(job.id), Option.getOrElse(() => job)))
        ))
    })

    return Imports.of({ start, load, finish, get, recover })
  })

export const make: Effect.Effect<Imports["Type"], never, Requirements> = makeWith({})

export const layerWith = (options: Options): Layer.Layer<Imports, never, Requirements> =>
  Layer.effect(Imports, makeWith(options))

export const layer: Layer.Layer<Imports, never, Requirements> = layerWith({})

/** The job as the HTTP routes and the CLI show it. */
export const view = (job: ImportJob) => ({
  id: job.id,
  status: job.status,
  received: job.received,
  imported: job.imported,
  duplicates: job.duplicates,
  rejected: job.rejected.map((r) => ({ line: r.line, error: r.error })),
  startedAt: job.startedAt.toISOString(),
  ...(job.finishedAt === undefined ? {} : { finishedAt: job.finishedAt.toISOString() })
})
