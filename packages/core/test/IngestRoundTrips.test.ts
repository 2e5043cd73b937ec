import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { makeMilestone, seedProgram } from "../src/testing.js"
import { at, drainOutbox, liveTenant, rowOf, server } from "./support/pipeline.js"
import { layerRoundTrips, layerRoundTripsWith, layerRoundTripsWithKeys, roundTrips } from "./support/roundTrips.js"

const NOON = at("2026-05-10T12:00:00Z")
const DAY = 24 * 60 * 60 * 1000

/**
 * One lone action (in a program without milestones, the same in both), then `n` members at once:
 * they share the next batch. With `busy`, each of the `n` sends a zone new to them and crosses a
 * milestone with a reward that a subscription hears; with `keyed`, an idempotency key of its own.
 */
const scenario = (n: number, busy: boolean, keyed = false) =>
  Effect.gen(function*() {
    const t = yield* liveTenant({
      program: { milestones: [makeMilestone({ target: busy ? 1 : 2, rewardType: "coupon", rewardValue: "DAY1" })] }
    })
    const other = yield* seedProgram(t, { status: "live", milestones: [] })
    yield* TestClock.setTime(NOON)
    const members = Array.from({ length: n }, (_, i) => `m${i}`)
    const { calls, result, trips } = yield* roundTrips(Effect.forEach(
      [
        { siteKey: t.project.siteKey, userHash: "lead", event: other.eventKey },
        ...members.map((userHash) => ({
          siteKey: t.project.siteKey,
          userHash,
          event: t.program.eventKey,
          ...(busy ? { tz: "Asia/Tokyo" } : {}),
          ...(keyed ? { idempotencyKey: `key-${userHash}` } : {})
        }))
      ],
      (body) => Effect.map(server(body), (r) => r.body),
      { concurrency: "unbounded" }
    ))
    return { t, members, result, trips, calls }
  })

describe("Ingest: what a batch waits for does not grow with its members", () => {
  it.effect("members who each store a new zone and cross a milestone cost a batch two round trips more, however many", () =>
    Effect.gen(function*() {
      const extra: Array<number> = []
      for (const n of [2, 8]) {
        const plain = yield* scenario(n, false)
        const busy = yield* scenario(n, true)
        assert.deepStrictEqual(busy.result.slice(1), busy.members.map(() => ({ ok: true, counted: true })))
        // What the round trips were spent on happened: the zones stored, the milestone and its
        // reward sent to the subscription, once per member.
        for (const m of busy.members) assert.strictEqual((yield* rowOf(busy.t, m, "live"))?.timezone, "Asia/Tokyo")
        const sent = (yield* drainOutbox).filter(({ message }) => message.programId === busy.t.program.id)
        assert.strictEqual(sent.length, 2 * n)
        extra.push(busy.trips - plain.trips)
      }
      // The milestone's achievement with the reads of who listens, then the outbox; the zones go
      // with the batch's last writes.
      assert.deepStrictEqual(extra, [2, 2])
    }).pipe(Effect.provide(layerRoundTrips)))
})

describe("Ingest: idempotency keys that arrive together are claimed together", () => {
  const claimedBy = (layer: typeof layerRoundTrips) =>
    Effect.gen(function*() {
      const claims: Array<ReadonlyArray<string>> = []
      const extra: Array<number> = []
      for (const n of [2, 8]) {
        const plain = yield* scenario(n, false)
        const keyed = yield* scenario(n, false, true)
        assert.deepStrictEqual(keyed.result.slice(1), keyed.members.map(() => ({ ok: true, counted: true })))
        for (const m of keyed.members) assert.strictEqual((yield* rowOf(keyed.t, m, "live"))?.run, 1)
        claims.push(keyed.calls.filter((c) => c.startsWith("claim") || c.startsWith("complete")))
        extra.push(keyed.trips - plain.trips)
      }
      return { claims, extra }
    }).pipe(Effect.provide(layer))

  it.effect("members who each send a key of their own cost their batch one claim call and no round trip, however many", () =>
    Effect.gen(function*() {
      const { claims, extra } = yield* claimedBy(layerRoundTrips)
      // The claim goes with the batch's first statements, inside its transaction; the answers are
      // stored with its last writes.
      assert.deepStrictEqual(claims, [["claimWithin", "completeMany"], ["claimWithin", "completeMany"]])
      assert.deepStrictEqual(extra, [0, 0])
    }))

  it.effect("on a store without claimWithin, one claim call and one round trip ahead of the transaction, however many", () =>
    Effect.gen(function*() {
      const { claims, extra } = yield* claimedBy(layerRoundTripsWithKeys(({ claimWithin: _, ...store }) => store))
      assert.deepStrictEqual(claims, [["claimMany", "completeMany"], ["claimMany", "completeMany"]])
      assert.deepStrictEqual(extra, [1, 1])
    }))
})

/**
 * Members who acted yesterday (`m…`, at run 1) and one who reached the 2-day milestone yesterday
 * (`done`, at run 2), then all of them at once, behind a lone action in a program without
 * milestones (which goes first, alone, as in `scenario`): the calls that lock and those that
 * write rows and days, and the round trips, once the answers and messages are checked.
 */
const crossing = Effect.gen(function*() {
  const t = yield* liveTenant({ program: { milestones: [makeMilestone({ target: 2 })] } })
  const other = yield* seedProgram(t, { status: "live", milestones: [] })
  const act = (userHash: string) =>
    server({ siteKey: t.project.siteKey, userHash, event: userHash === "lead" ? other.eventKey : t.program.eventKey })
  const members = ["m0", "m1", "m2"]
  yield* TestClock.setTime(NOON - 2 * DAY)
  yield* act("done")
  yield* TestClock.setTime(NOON - DAY)
  for (const m of ["done", ...members]) yield* act(m)
  yield* drainOutbox
  yield* TestClock.setTime(NOON)
  const everyone = ["lead", "done", ...members]
  const { calls, result, trips } = yield* roundTrips(Effect.forEach(everyone, act, { concurrency: "unbounded" }))
  assert.deepStrictEqual(result.map((r): unknown => r.body), everyone.map(() => ({ ok: true, counted: true })))
  assert.strictEqual((yield* rowOf(t, "done", "live"))?.run, 3)
  // Each member who reached the milestone today is told once; `done`, who had it, is not told again.
  const told = (yield* drainOutbox).map(({ body }) => String(body.data.userHash))
  assert.sameMembers(told, members)
  return {
    calls: calls.filter((c) => c.startsWith("lock") || c === "achievedMany"),
    writes: calls.filter((c) => c.startsWith("save") || c === "addDays"),
    trips
  }
})

describe("Ingest: rows locked ahead come with their achievements where the store keeps them there", () => {
  it.effect("with lockExistingWithAchieved, one statement reads a batch's rows and achievements", () =>
    Effect.gen(function*() {
      const known = yield* crossing.pipe(Effect.provide(layerRoundTrips))
      const apart = yield* crossing.pipe(
        Effect.provide(layerRoundTripsWith({ streaks: ({ lockExistingWithAchieved: _, ...store }) => store }))
      )
      // The lead's batch locks with `lockMany` (a batch of one does not lock ahead).
      assert.deepStrictEqual(known.calls, ["lockMany", "lockExistingWithAchieved"])
      // A store without it: the same answers and round trips, the achievements a statement of their own.
      assert.deepStrictEqual(apart.calls, ["lockMany", "lockExisting", "achievedMany"])
      assert.strictEqual(known.trips, apart.trips)
    }))

  it.effect("rows whose achievements the store does not know with them are asked achievedMany, in one more round trip", () =>
    Effect.gen(function*() {
      const known = yield* crossing.pipe(Effect.provide(layerRoundTrips))
      const unknown = yield* crossing.pipe(Effect.provide(layerRoundTripsWith({
        streaks: (store) => ({
          ...store,
          lockExistingWithAchieved: (keys) =>
            Effect.map(store.lockExistingWithAchieved!(keys), (rows) => rows.map(Option.map(({ row }) => ({ row, achieved: undefined }))))
        })
      })))
      assert.deepStrictEqual(unknown.calls, ["lockMany", "lockExistingWithAchieved", "achievedMany"])
      assert.strictEqual(unknown.trips, known.trips + 1)
    }))
})

describe("Ingest: a round's rows and its new days go in one statement where the store can", () => {
  it.effect("with saveAllWithDays, one statement saves the rows of members who acted before and adds their days", () =>
    Effect.gen(function*() {
      const one = yield* crossing.pipe(Effect.provide(layerRoundTrips))
      const two = yield* crossing.pipe(Effect.provide(layerRoundTripsWith({ streaks: ({ saveAllWithDays: _, ...store }) => store })))
      // The lead's batch (a new member, no lookahead) asks for its day and saves; the members' batch
      // found its days new ahead.
      assert.deepStrictEqual(one.writes, ["addDays", "saveAll", "saveAllWithDays"])
      assert.deepStrictEqual(two.writes, ["addDays", "saveAll", "addDays", "saveAll"])
      assert.strictEqual(one.trips, two.trips)
    }))
})
