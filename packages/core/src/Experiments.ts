/**
 * Proof experiments (docs/api.md#experiments-proof): a holdout of a program's members who receive
 * no outbound events, to measure what the events are worth. Membership of the control group is a
 * stable hash of (experiment, member), so no per-member row is written and every replica agrees.
 *
 * Retention, as reported by `current` and `stop`, on the live ledger only: a member *takes part*
 * when they have an active day on or after the start (the start's local date in the member's
 * zone) up to the end (or today); they are *retained* when they were active on some day at least
 * 7 days after their first active day since the start. `retention7d` = retained / members of the
 * group (null for an empty group). Members who joined less than 7 days ago count as not (yet)
 * retained, in both groups alike, so the comparison stays fair while the experiment runs.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import * as Calendar from "./Calendar.js"
import { Experiment, StreakKey, type StreakRow } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { DirectoryStore, ExperimentStore, StreakStore } from "./Ports.js"

/**
 * Whether the member is in the control group: the first 4 bytes of
 * SHA-256(`${experimentId}:${userHash}`), as an unsigned integer, mod 100 < holdoutPercent.
 * Stable across processes and versions; a new experiment reshuffles the groups.
 */
export const isControl = (experimentId: string, userHash: string, holdoutPercent: number): boolean =>
  createHash("sha256").update(`${experimentId}:${userHash}`, "utf8").digest().readUInt32BE(0) % 100 < holdoutPercent

/**
 * Whether the member is in the control group of the program's running experiment (false when none
 * runs). Outbound events are never emitted for such members (docs/webhooks.md#event-types).
 */
export const inControlGroup = (
  programId: Ids.ProgramId,
  userHash: Ids.UserHash
): Effect.Effect<boolean, StorageError, ExperimentStore> =>
  Effect.flatMap(ExperimentStore, (store) =>
    Effect.map(
      store.running(programId),
      Option.match({ onNone: () => false, onSome: (e) => isControl(e.id, userHash, e.holdoutPercent) })
    ))

export interface GroupResult {
  /** Members with an active day since the start. */
  readonly members: number
  /** Of those, members active again at least 7 days after their first active day since the start. */
  readonly retained: number
  /** `retained / members`, or null when the group is empty. */
  readonly retention7d: number | null
}

export interface ExperimentResult {
  readonly experiment: Experiment
  /** Held out: never receives outbound events. */
  readonly control: GroupResult
  /** Everyone else: receives outbound events as usual. */
  readonly treatment: GroupResult
}

export class Experiments extends Context.Tag("@streaks/core/Experiments")<Experiments, {
  /**
   * Starts an experiment on the program now. `holdoutPercent` must be an integer in 1..50; a
   * second experiment while one runs is refused with InvalidBody (message says why; the HTTP
   * answer stays 400 `INVALID_BODY`, the only client error code the contract gives this route).
   */
  readonly start: (
    programId: string,
    holdoutPercent: number
  ) => Effect.Effect<Experiment, InvalidBody | NotFound | StorageError>
  /** The running experiment with its groups so far; NotFound when none runs. */
  readonly current: (programId: string) => Effect.Effect<ExperimentResult, NotFound | StorageError>
  /** Ends the running experiment now and returns its final groups; NotFound when none runs. */
  readonly stop: (programId: string) => Effect.Effect<ExperimentResult, NotFound | StorageError>
}>() {}

const noneRunning = new NotFound({ message: "no running experiment" })
const now = Effect.map(DateTime.now, DateTime.toDateUtc)

type Outcome = "none" | "joined" | "retained"

const group = (outcomes: ReadonlyArray<Outcome>): GroupResult => {
  const members = outcomes.filter((o) => o !== "none").length
  const retained = outcomes.filter((o) => o === "retained").length
  return { members, retained, retention7d: members === 0 ? null : retained / members }
}

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const experiments = yield* ExperimentStore
  const streaks = yield* StreakStore

  /** One member's part in the experiment, from their active days in [start, until] (local dates). */
  const outcome = (experiment: Experiment, until: Date, row: StreakRow): Effect.Effect<Outcome, StorageError> => {
    const from = Calendar.localDate(experiment.startedAt, row.timezone)
    // `lastActiveDay` is the latest active day: a member idle since before the start needs no read.
    if (row.lastActiveDay === undefined || row.lastActiveDay < from) return Effect.succeed("none")
    const key = new StreakKey({
      projectId: row.projectId,
      programId: row.programId,
      userHash: row.userHash,
      ledger: "live"
    })
    return Effect.map(streaks.days(key, { from, to: Calendar.localDate(until, row.timezone) }), (days) => {
      const first = days[0]
      const last = days[days.length - 1]
      if (first === undefined || last === undefined) return "none"
      return last >= Calendar.addDays(first, 7) ? "retained" : "joined"
    })
  }

  const results = (experiment: Experiment, until: Date): Effect.Effect<ExperimentResult, StorageError> =>
    Effect.gen(function*() {
      const rows = yield* streaks.rows({ programId: experiment.programId, ledger: "live" })
      const outcomes = yield* Effect.forEach(
        rows,
        (row) =>
          Effect.map(
            outcome(experiment, until, row),
            (o) => [isControl(experiment.id, row.userHash, experiment.holdoutPercent), o] as const
          ),
        { concurrency: 8 }
      )
      return {
        experiment,
        control: group(outcomes.filter(([c]) => c).map(([, o]) => o)),
        treatment: group(outcomes.filter(([c]) => !c).map(([, o]) => o))
      }
    })

  return Experiments.of({
    start: (programId, holdoutPercent) =>
      Effect.gen(function*() {
        if (!Number.isInteger(holdoutPercent) || holdoutPercent < 1 || holdoutPercent > 50) {
          return yield* new InvalidBody({ message: "holdoutPercent must be an integer from 1 to 50" })
        }
        const program = yield* directory.program(Ids.unsafe("ProgramId", programId))
        if (Option.isNone(program)) return yield* new NotFound({ message: "program not found" })
        const experiment = new Experiment({
          id: yield* Ids.make("ExperimentId"),
          projectId: program.value.projectId,
          programId: program.value.id,
          holdoutPercent,
          startedAt: yield* now
        })
        if (!(yield* experiments.start(experiment))) {
          return yield* new InvalidBody({ message: "an experiment is already running for this program; stop it first" })
        }
        return experiment
      }),

    current: (programId) =>
      Effect.gen(function*() {
        const running = yield* experiments.running(Ids.unsafe("ProgramId", programId))
        if (Option.isNone(running)) return yield* noneRunning
        return yield* results(running.value, yield* now)
      }),

    stop: (programId) =>
      Effect.gen(function*() {
        const at = yield* now
        const ended = yield* experiments.end(Ids.unsafe("ProgramId", programId), at)
        if (Option.isNone(ended)) return yield* noneRunning
        // The port may hand back the row as it was before ending; the answer always shows the end.
        const experiment = ended.value.endedAt === undefined
          ? new Experiment({ ...ended.value, endedAt: at })
          : ended.value
        return yield* results(experiment, experiment.endedAt ?? at)
      })
  })
})

export const layer: Layer.Layer<Experiments, never, DirectoryStore | ExperimentStore | StreakStore> = Layer.effect(
  Experiments,
  make
)
