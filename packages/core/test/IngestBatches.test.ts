import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref, TestClock } from "effect"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import { at, daysOf, layerPoisoned, logged, POISON, rowOf, server, tenant, Transactions } from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")
const DAY = 86_400_000

const action = (t: Tenant, userHash: string, extra: Record<string, unknown> = {}) => ({
  siteKey: t.project.siteKey,
  userHash,
  event: t.program.eventKey,
  ...extra
})

describe("Ingest: concurrent actions share transactions", () => {
  it.effect("60 concurrent actions of 20 members, late days first, leave the rows of applying them one by one, in a few transactions", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const members = Array.from({ length: 20 }, (_, i) => `m${i}`)
      // Each member acts on three consecutive days, the oldest day last (a late action joins runs).
      const actions = [0, 1, 2].flatMap((back) =>
        members.map((m) => action(t, m, { ts: new Date(NOON - back * DAY).toISOString() }))
      ).reverse()
      const answers = yield* Effect.forEach(actions, (a) => server(a), { concurrency: "unbounded" })
      assert.isTrue(answers.every((a) => a.body.counted === true && a.body.duplicate === undefined))
      for (const m of members) {
        const row = yield* rowOf(t, m, "live")
        assert.deepStrictEqual([row?.run, row?.best, row?.lastActiveDay], [3, 3, "2026-05-10"], m)
        assert.deepStrictEqual(yield* daysOf(t, m, "live"), ["2026-05-08", "2026-05-09", "2026-05-10"])
      }
      assert.deepStrictEqual((yield* logged(t, "live")).map((c) => [c.date, c.count, c.counted]), [
        ["2026-05-08", 20, 20],
        ["2026-05-09", 20, 20],
        ["2026-05-10", 20, 20]
      ])
      assert.isBelow(yield* Ref.get(yield* Transactions), 30)
    }).pipe(Effect.provide(layerPoisoned)))

  it.effect("a member's actions in one batch apply in arrival order: the zone sent with the first decides the second's day", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      // 20:00 UTC on 10 May is already 11 May in Tokyo.
      yield* TestClock.setTime(at("2026-05-10T20:00:00Z"))
      const answers = yield* Effect.all([
        server(action(t, "u1", { tz: "Asia/Tokyo", ts: "2026-05-09T20:00:00Z" })),
        server(action(t, "u1"))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(answers.map((a) => a.body), [{ ok: true, counted: true }, { ok: true, counted: true }])
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10", "2026-05-11"])
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.timezone, "Asia/Tokyo")
    }).pipe(Effect.provide(layerPoisoned)))

  it.effect("an action whose write fails fails alone: the others of its batch are applied", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const results = yield* Effect.forEach(
        ["a", "b", POISON, "c", "d"],
        (m) => Effect.either(server(action(t, m))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map((r) => r._tag === "Left" ? r.left._tag : r.right.body.counted), [
        true,
        true,
        "StorageError",
        true,
        true
      ])
      assert.isUndefined(yield* rowOf(t, POISON, "live"))
      for (const m of ["a", "b", "c", "d"]) assert.strictEqual((yield* rowOf(t, m, "live"))?.run, 1)
      assert.deepStrictEqual((yield* logged(t, "live")).map((c) => c.count), [4])
    }).pipe(Effect.provide(layerPoisoned)))
})
