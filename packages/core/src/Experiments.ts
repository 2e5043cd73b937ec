/**
 * Proof experiments, the service (docs/api.md#experiments-proof): start, stop and read a
 * program's holdout experiments with their report. The rules (groups, dates, the report) are the
 * pure `ProofReport`; the counts come from the store (`ReportStore.cohorts`), so no member's rows
 * reach the service, whatever the number of members.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Calendar from "./Calendar.js"
import { Experiment } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import * as Policy from "./Policy.js"
import { DirectoryStore, ExperimentStore } from "./Ports.js"
import * as ProofReport from "./ProofReport.js"
import { ReportStore } from "./ReportStore.js"

/** Whether the member is in the control group (see `ProofReport.isControl`). */
export const isControl = ProofReport.isControl

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

export class Experiments extends Context.Tag("@streaks/core/Experiments")<Experiments, {
  /**
   * Starts an experiment on the program now. `holdoutPercent` must be an integer in 1..50; a
   * second experiment while one runs is refused with InvalidBody (message says why; the HTTP
   * answer stays 400 `INVALID_BODY`, the only client error code this route has).
   */
  readonly start: (
    programId: string,
    holdoutPercent: number
  ) => Effect.Effect<Experiment, InvalidBody | NotFound | StorageError>
  /** The running experiment with its groups and report; NotFound when none runs. */
  readonly current: (programId: string) => Effect.Effect<ProofReport.ExperimentReport, NotFound | StorageError>
  /** One experiment of the program, running or ended; NotFound when the program has no such experiment. */
  readonly get: (
    programId: string,
    experimentId: string
  ) => Effect.Effect<ProofReport.ExperimentReport, NotFound | StorageError>
  /** Every experiment of the program with its report, newest first. */
  readonly history: (programId: string) => Effect.Effect<ReadonlyArray<ProofReport.ExperimentReport>, StorageError>
  /** Ends the running experiment now and returns it with its final report; NotFound when none runs. */
  readonly stop: (programId: string) => Effect.Effect<ProofReport.ExperimentReport, NotFound | StorageError>
}>() {}

const noneRunning = new NotFound({ message: "no running experiment" })
const noSuchExperiment = new NotFound({ message: "experiment not found" })
const now = Effect.map(DateTime.now, DateTime.toDateUtc)

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const experiments = yield* ExperimentStore
  const reports = yield* ReportStore

  const report = (experiment: Experiment): Effect.Effect<ProofReport.ExperimentReport, StorageError> =>
    Effect.gen(function*() {
      const at = yield* now
      const program = yield* directory.program(experiment.programId)
      const dayStartHour = Option.match(program, { onNone: () => 0, onSome: (p) => Policy.of(p).dayStartHour })
      const zones = yield* reports.zones(experiment.projectId, experiment.programId)
      const windows = zones.filter(Calendar.isValidZone).map((zone) =>
        ProofReport.windowOf(experiment, zone, dayStartHour, at)
      )
      const cohorts = windows.length === 0
        ? {
          control: ProofReport.emptyGroup(ProofReport.horizons),
          treatment: ProofReport.emptyGroup(ProofReport.horizons)
        }
        : yield* reports.cohorts(ProofReport.cohortQuery(experiment, windows))
      return ProofReport.experimentReport(experiment, cohorts)
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
        return yield* report(running.value)
      }),

    get: (programId, experimentId) =>
      Effect.gen(function*() {
        const all = yield* experiments.history(Ids.unsafe("ProgramId", programId))
        const found = all.find((e) => e.id === experimentId)
        if (found === undefined) return yield* noSuchExperiment
        return yield* report(found)
      }),

    history: (programId) =>
      Effect.flatMap(
        experiments.history(Ids.unsafe("ProgramId", programId)),
        (all) => Effect.forEach(all, report, { concurrency: 2 })
      ),

    stop: (programId) =>
      Effect.gen(function*() {
        const at = yield* now
        const ended = yield* experiments.end(Ids.unsafe("ProgramId", programId), at)
        if (Option.isNone(ended)) return yield* noneRunning
        // The port may hand back the row as it was before ending; the answer always shows the end.
        const experiment = ended.value.endedAt === undefined
          ? new Experiment({ ...ended.value, endedAt: at })
          : ended.value
        return yield* report(experiment)
      })
  })
})

export const layer: Layer.Layer<Experiments, never, DirectoryStore | ExperimentStore | ReportStore> = Layer.effect(
  Experiments,
  make
)
