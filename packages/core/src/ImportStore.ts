/**
 * The history-import port (docs/operations.md#bringing-your-history): import jobs and their
 * progress, and the batched load of imported actions as identities and activity days, written in
 * large batches (the Postgres adapter copies each batch into a staging table).
 */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { LocalDate } from "./Calendar.js"
import type { Achievement } from "./Domain.js"
import type { StorageError } from "./Errors.js"
import type { ProgramId, ProjectId, UserHash } from "./Ids.js"
import type { MemberZone } from "./Ports.js"

type Io<A> = Effect.Effect<A, StorageError>

/**
 * `interrupted`: its owner (the process loading it) went away before every line was read; the
 * lines committed so far are in, and sending the same input again imports the rest.
 */
export type ImportStatus = "running" | "finished" | "failed" | "interrupted"

/** A line refused with the error code ingest would answer. */
export interface ImportRejection {
  readonly line: number
  readonly error: string
}

/** One import of past actions into a program's live ledger, with its progress. */
export interface ImportJob {
  readonly id: string
  readonly projectId: ProjectId
  readonly programId: ProgramId
  /**
   * What the caller names the input by (the CLI: a digest of the file), so that an interrupted
   * import of the same input resumes; empty when resuming is not offered (HTTP).
   */
  readonly source: string
  readonly status: ImportStatus
  /** Lines read (blank lines and a CSV header are not counted). */
  readonly received: number
  readonly imported: number
  readonly duplicates: number
  /** The first `maxRejections` rejected lines. */
  readonly rejected: ReadonlyArray<ImportRejection>
  /** The last line whose batch committed: an interrupted import resumes after it. */
  readonly committedLine: number
  readonly startedAt: Date
  readonly finishedAt?: Date | undefined
  /**
   * The last time its owner said it is at work on it: a `running` job whose heartbeat is older
   * than the lease has lost its owner (see `ImportStore.claimStale`).
   */
  readonly heartbeatAt: Date
  /** Every line is read: what is left is the recomputation, which any process can redo. */
  readonly loaded: boolean
}

/** Rejections kept on a job; further ones are dropped (the lines are still refused). */
export const maxRejections = 1000

/** One accepted line, resolved: its member (aliases resolved), its identity and its activity day. */
export interface ImportedAction {
  readonly userHash: UserHash
  /** The line's `idempotencyKey` when given, else its (userHash as sent, instant). */
  readonly identity: string
  readonly day: LocalDate
}

/** What one batch of lines writes, with the job's progress after it. */
export interface ImportBatch {
  readonly importId: string
  readonly projectId: ProjectId
  readonly programId: ProgramId
  readonly actions: ReadonlyArray<ImportedAction>
  /** Zones the batch's lines named (the last one per member). */
  readonly zones: ReadonlyArray<MemberZone>
  /** Added to the job's counts. */
  readonly received: number
  /** Lines found duplicates before the batch was written (see `known`), added to the job's count. */
  readonly duplicates: number
  /** Members of those duplicates: marked touched too, so that the recomputation reaches them. */
  readonly touched: ReadonlyArray<UserHash>
  readonly rejected: ReadonlyArray<ImportRejection>
  /** The job's `committedLine` once the batch is written. */
  readonly committedLine: number
}

export class ImportStore extends Context.Tag("@streaks/core/ImportStore")<ImportStore, {
  readonly create: (job: ImportJob) => Io<void>
  /** None for an unknown id. */
  readonly get: (id: string) => Io<Option.Option<ImportJob>>
  /** The latest `running` or `interrupted` job of the program with this non-empty `source`, to resume. */
  readonly resumable: (programId: ProgramId, source: string) => Io<Option.Option<ImportJob>>
  /**
   * Takes a `running` or `interrupted` job over to resume it: `running` again, not finished, its
   * heartbeat `at`. False when it is neither (finished or failed meanwhile).
   */
  readonly resume: (id: string, at: Date) => Io<boolean>
  /** Renews the job's heartbeat; false when it is no longer `running` (another process took it). */
  readonly heartbeat: (id: string, at: Date) => Io<boolean>
  /** Records that every line of the job is read. */
  readonly loaded: (id: string) => Io<void>
  /**
   * Claims, atomically (two processes never claim one job), the `running` jobs whose heartbeat is
   * older than `staleBefore`: a loaded one gets the heartbeat `at` and stays `running` (the caller
   * recomputes it); any other becomes `interrupted`, finished `at`. Answers them as they are now.
   */
  readonly claimStale: (staleBefore: Date, at: Date) => Io<ReadonlyArray<ImportJob>>
  /**
   * Writes a batch atomically (it commits whole or not at all, progress included). For each
   * action whose identity the program has not stored yet (also earlier in the batch): stores the
   * identity, adds the day on the live ledger unless it is active already, and records the
   * member as touched by the import; the others count as duplicates. Marks the `touched` members
   * touched as well. Stores the zones, adds
   * `received`, the new identities to `imported`, the rest and `duplicates` to `duplicates`, appends the
   * rejections (up to `maxRejections` in all) and sets `committedLine`. Answers the job after it.
   * Fails, writing nothing, when the job is not `running` (claimed as interrupted meanwhile).
   */
  readonly load: (batch: ImportBatch) => Io<ImportJob>
  /** Whether each identity is stored for the program already, in input order. */
  readonly known: (
    projectId: ProjectId,
    programId: ProgramId,
    identities: ReadonlyArray<string>
  ) => Io<ReadonlyArray<boolean>>
  /** Members touched by the import whose canonical id sorts after `after`, ascending, at most `limit`. */
  readonly members: (
    importId: string,
    after: UserHash | undefined,
    limit: number
  ) => Io<ReadonlyArray<UserHash>>
  /**
   * Records the milestones an import found reached (inside the caller's transaction), in one
   * statement where the store allows: an achievement recorded already is kept as it was. Reads
   * of achievements (`AchievementStore.achieved`, `StateStore`) see them as any other.
   */
  readonly achieve: (achievements: ReadonlyArray<Achievement>) => Io<void>
  /** Sets a `running` job's status and `finishedAt` (a job in any other status is left as it is). */
  readonly finish: (id: string, status: ImportStatus, at: Date) => Io<void>
}>() {}
