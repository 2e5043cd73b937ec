/**
 * The read behind `GET /v1/state`: members' standing (member, row, days in a range, achievements)
 * for the reads that arrive together. A store that only has the record-level ports gets it from
 * `fromPorts`; one that can fuse the read into a statement provides its own.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { LocalDate } from "./Calendar.js"
import type { StreakKey } from "./Domain.js"
import type { StorageError } from "./Errors.js"
import { keyOf } from "./IngestStore.js"
import { AchievementStore, MemberStore, type Standing, type StandingRef, StreakStore } from "./Ports.js"

export class StateStore extends Context.Tag("@streaks/core/StateStore")<StateStore, {
  /**
   * For each ref, in input order (a ref may repeat): the member behind `ref.userHash` (as
   * `MemberStore.lookup`), and for that member's key in `ref.programId` on `ref.ledger` the row
   * (if any), the active days in [from, to] ascending and the achieved milestone ids. One
   * consistent read, one round trip where the store allows.
   */
  readonly standing: (
    refs: ReadonlyArray<StandingRef>,
    from: LocalDate,
    to: LocalDate
  ) => Effect.Effect<ReadonlyArray<Standing>, StorageError>
}>() {}

/** `StateStore` over the record-level ports: a lookup, a row read, the days of each key, the achievements. */
export const fromPorts: Effect.Effect<StateStore["Type"], never, MemberStore | StreakStore | AchievementStore> = Effect
  .gen(function*() {
    const members = yield* MemberStore
    const streaks = yield* StreakStore
    const achievements = yield* AchievementStore
    return StateStore.of({
      standing: (refs, from, to) =>
        Effect.gen(function*() {
          const found = yield* members.lookup(refs)
          const keys = refs.map((ref, i): StreakKey => ({
            projectId: ref.projectId,
            programId: ref.programId,
            userHash: found[i]!.userHash,
            ledger: ref.ledger
          } as StreakKey))
          const rows = new Map((yield* streaks.rows({ keys })).map((row) => [keyOf(row), row]))
          const [days, achieved] = yield* Effect.all([
            Effect.forEach(keys, (key) => streaks.days(key, { from, to })),
            achievements.achieved(keys)
          ])
          return refs.map((_, i): Standing => ({
            member: found[i]!,
            row: Option.fromNullable(rows.get(keyOf(keys[i]!))),
            days: days[i]!,
            achieved: achieved[i]!.map((a) => a.milestoneId)
          }))
        })
    })
  })

/** `StateStore` from the record-level ports in context (see `fromPorts`). */
export const layerFromPorts = Layer.effect(StateStore, fromPorts)
