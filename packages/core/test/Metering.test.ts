import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type * as Ids from "../src/Ids.js"
import { Metering, recordActive } from "../src/Metering.js"
import { Provisioning } from "../src/Provisioning.js"
import { layer, tenant } from "./support/services.js"

const hash = (s: string): Ids.UserHash => s as Ids.UserHash

describe("Metering", () => {
  it.effect("an action at Dec 31 23:59:59 UTC counts in December, one at Jan 1 00:00 UTC in January", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const metering = yield* Metering
      yield* TestClock.setTime(Date.UTC(2027, 0, 1, 0, 30))
      yield* recordActive(a.workspace.id, a.project.id, hash("u_dec"), new Date(Date.UTC(2026, 11, 31, 23, 59, 59)))
      yield* recordActive(a.workspace.id, a.project.id, hash("u_jan"), new Date(Date.UTC(2027, 0, 1, 0, 0, 0)))
      yield* recordActive(a.workspace.id, a.project.id, hash("u_both"), new Date(Date.UTC(2026, 11, 31, 23, 59, 59)))
      yield* recordActive(a.workspace.id, a.project.id, hash("u_both"), new Date(Date.UTC(2027, 0, 1, 0, 0, 1)))
      const january = yield* metering.usage(a.workspace.id)
      assert.deepStrictEqual(january, {
        month: "2027-01",
        plan: "starter",
        limit: 500,
        activeStreakers: 2,
        overLimit: false
      })
      assert.strictEqual((yield* metering.usage(a.workspace.id, "2026-12")).activeStreakers, 2)
    }).pipe(Effect.provide(layer)))

  it.effect("a member counts once per month however often active; the same userHash in two projects counts twice", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const other = yield* (yield* Provisioning).createProject({
        workspaceId: a.workspace.id,
        name: "B",
        allowedOrigins: []
      })
      yield* TestClock.setTime(Date.UTC(2026, 4, 20))
      for (let day = 1; day <= 20; day++) {
        yield* recordActive(a.workspace.id, a.project.id, hash("u_1"), new Date(Date.UTC(2026, 4, day, 12)))
      }
      yield* recordActive(a.workspace.id, other.project.id, hash("u_1"), new Date(Date.UTC(2026, 4, 3)))
      assert.strictEqual((yield* (yield* Metering).usage(a.workspace.id)).activeStreakers, 2)
    }).pipe(Effect.provide(layer)))

  it.effect("over the plan limit reports pause; at the limit they do not; raising the plan lifts the pause with nothing lost", () =>
    Effect.gen(function*() {
      const a = yield* tenant({ plan: "starter" })
      const metering = yield* Metering
      yield* TestClock.setTime(Date.UTC(2026, 5, 15))
      const at = new Date(Date.UTC(2026, 5, 10))
      for (let i = 0; i < 500; i++) yield* recordActive(a.workspace.id, a.project.id, hash(`u_${i}`), at)
      assert.isFalse((yield* metering.usage(a.workspace.id)).overLimit, "exactly 500 is within starter")
      assert.isFalse(yield* metering.reportsPaused(a.workspace.id))

      yield* recordActive(a.workspace.id, a.project.id, hash("u_500"), at)
      assert.deepStrictEqual(yield* metering.usage(a.workspace.id), {
        month: "2026-06",
        plan: "starter",
        limit: 500,
        activeStreakers: 501,
        overLimit: true
      })
      assert.isTrue(yield* metering.reportsPaused(a.workspace.id))
      assert.isFalse(yield* metering.reportsPaused(a.workspace.id, "2026-05"), "another month is judged on its own")

      yield* (yield* Provisioning).setPlan(a.workspace.id, "growth")
      assert.deepStrictEqual(yield* metering.usage(a.workspace.id), {
        month: "2026-06",
        plan: "growth",
        limit: 2500,
        activeStreakers: 501,
        overLimit: false
      })
      assert.isFalse(yield* metering.reportsPaused(a.workspace.id))
    }).pipe(Effect.provide(layer)))

  it.effect("a malformed month is InvalidBody and an unknown workspace NotFound", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const metering = yield* Metering
      for (const month of ["2026-13", "2026-1", "26-01", "2026-00"]) {
        assert.strictEqual((yield* Effect.flip(metering.usage(a.workspace.id, month)))._tag, "InvalidBody", month)
      }
      assert.strictEqual((yield* Effect.flip(metering.usage("ws_unknown")))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))
})
