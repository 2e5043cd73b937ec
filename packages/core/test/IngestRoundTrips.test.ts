import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeMilestone, seedProgram } from "../src/testing.js"
import { at, drainOutbox, liveTenant, rowOf, server } from "./support/pipeline.js"
import { layerRoundTrips, roundTrips } from "./support/roundTrips.js"

const NOON = at("2026-05-10T12:00:00Z")

/**
 * One lone action (in a program without milestones, the same in both), then `n` members at once:
 * they share the next batch. With `busy`, each of the `n` sends a zone new to them and crosses a
 * milestone with a reward that a subscription hears.
 */
const scenario = (n: number, busy: boolean) =>
  Effect.gen(function*() {
    const t = yield* liveTenant({
      program: { milestones: [makeMilestone({ target: busy ? 1 : 2, rewardType: "coupon", rewardValue: "DAY1" })] }
    })
    const other = yield* seedProgram(t, { status: "live", milestones: [] })
    yield* TestClock.setTime(NOON)
    const members = Array.from({ length: n }, (_, i) => `m${i}`)
    const { result, trips } = yield* roundTrips(Effect.forEach(
      [
        { siteKey: t.project.siteKey, userHash: "lead", event: other.eventKey },
        ...members.map((userHash) => ({
          siteKey: t.project.siteKey,
          userHash,
          event: t.program.eventKey,
          ...(busy ? { tz: "Asia/Tokyo" } : {})
        }))
      ],
      (body) => Effect.map(server(body), (r) => r.body),
      { concurrency: "unbounded" }
    ))
    return { t, members, result, trips }
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
