/** Stand-ins for the fast path's services whose every call ends with one failure (tests of the doors' answers). */
import { Aliases, type Errors, Ingest, StateQuery } from "@streaks/core"
import { RateLimit } from "@streaks/http"
import { type Effect, type Exit, Layer } from "effect"

type Failure = Exit.Exit<never, Errors.StorageError>

/** Every call ends with `failure`; `resolveProject` may do something first (it runs where the door runs it). */
export const failingWith = (
  failure: Failure,
  resolveProject: () => Effect.Effect<never, Errors.StorageError> = () => failure
) =>
  Layer.mergeAll(
    Layer.succeed(
      StateQuery.StateQuery,
      StateQuery.StateQuery.of({
        state: () => failure,
        resolveProject,
        stateOf: () => failure,
        memberStreak: () => failure
      })
    ),
    Layer.succeed(
      Ingest.Ingest,
      Ingest.Ingest.of({
        resolveProject,
        record: () => failure
      })
    ),
    Layer.succeed(Aliases.Aliases, {} as Aliases.Aliases["Type"]),
    RateLimit.layer({ ipPerSecond: 100, sitePerSecond: 100 })
  )
