import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as Calendar from "../src/Calendar.js"
import { StreakKey, StreakRow, type Ledger } from "../src/Domain.js"
import { Experiments, inControlGroup, isControl } from "../src/Experiments.js"
import type * as Ids from "../src/Ids.js"
import { StreakStore } from "../src/Ports.js"
import * as Streak from "../src/Streak.js"
import { Subscriptions } from "../src/Subscriptions.js"
import { httpsOnly, layer, principalOf, tenant } from "./support/services.js"

const hash = (s: string): Ids.UserHash => s as Ids.UserHash

/** Gives a member these active days (and the matching streak row) on a program's ledger. */
const seed = (
  program: { readonly id: Ids.ProgramId; readonly projectId: Ids.ProjectId },
  userHash: string,
  days: ReadonlyArray<string>,
  options?: { readonly ledger?: Ledger; readonly zone?: string }
) =>
  Effect.gen(function*() {
    const store = yield* StreakStore
    const zone = options?.zone ?? "UTC"
    const ids = {
      projectId: program.projectId,
      programId: program.id,
      userHash: hash(userHash),
      ledger: options?.ledger ?? "live"
    }
    const key = new StreakKey(ids)
    yield* store.lock([{ key, timezone: zone }])
    const dates = days.map(Calendar.unsafeLocalDate)
    yield* store.addDays(dates.map((day) => ({ key, day })))
    const summary = Streak.fromDays(dates, zone)
    yield* store.save([
      new StreakRow({
        ...ids,
        ...(summary.lastActiveDay === undefined ? {} : { lastActiveDay: summary.lastActiveDay }),
        run: summary.run,
        best: summary.best,
        timezone: zone,
        updatedAt: new Date(0)
      })
    ])
  })

describe("isControl", () => {
  it("is stable: the same experiment and member always land in the same group", () => {
    for (let i = 0; i < 200; i++) {
      assert.strictEqual(isControl("exp_a", `u_${i}`, 30), isControl("exp_a", `u_${i}`, 30))
    }
  })

  it("puts about holdoutPercent of 10,000 members in the control group", () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `member_${i}`)
    for (const holdout of [1, 10, 25, 50]) {
      const share = (ids.filter((id) => isControl("exp_01proof", id, holdout)).length / ids.length) * 100
      assert.approximately(share, holdout, 1.5, `holdout ${holdout}%`)
    }
  })

  it("a new experiment draws new groups", () => {
    const ids = Array.from({ length: 1_000 }, (_, i) => `member_${i}`)
    const a = ids.filter((id) => isControl("exp_first", id, 50))
    const b = ids.filter((id) => isControl("exp_second", id, 50))
    assert.notDeepEqual(a, b)
  })
})

describe("Experiments", () => {
  it.effect("holdoutPercent must be an integer in 1..50, and the program must exist", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      for (const holdout of [0, 51, 10.5, -1]) {
        assert.strictEqual(
          (yield* Effect.flip(experiments.start(a.program.id, holdout)))._tag,
          "InvalidBody",
          String(holdout)
        )
      }
      assert.strictEqual((yield* Effect.flip(experiments.start("prg_unknown", 10)))._tag, "NotFound")
      const started = yield* experiments.start(a.program.id, 50)
      assert.match(started.id, /^exp_/)
      assert.strictEqual(started.holdoutPercent, 50)
    }).pipe(Effect.provide(layer)))

  it.effect("a second experiment is refused while one runs, and allowed after stop", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      const first = yield* experiments.start(a.program.id, 10)
      const refused = yield* Effect.flip(experiments.start(a.program.id, 20))
      assert.strictEqual(refused._tag, "InvalidBody")
      assert.include(refused.message ?? "", "already running")
      assert.strictEqual((yield* experiments.current(a.program.id)).experiment.id, first.id)
      const stopped = yield* experiments.stop(a.program.id)
      assert.isDefined(stopped.experiment.endedAt)
      assert.strictEqual((yield* Effect.flip(experiments.current(a.program.id)))._tag, "NotFound")
      assert.strictEqual((yield* Effect.flip(experiments.stop(a.program.id)))._tag, "NotFound")
      const second = yield* experiments.start(a.program.id, 20)
      assert.notStrictEqual(second.id, first.id)
    }).pipe(Effect.provide(layer)))

  it.effect("inControlGroup follows the running experiment's hash, and is false when none runs", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const members = Array.from({ length: 50 }, (_, i) => hash(`u_${i}`))
      for (const m of members) assert.isFalse(yield* inControlGroup(a.program.id, m))
      const experiment = yield* (yield* Experiments).start(a.program.id, 50)
      for (const m of members) {
        assert.strictEqual(yield* inControlGroup(a.program.id, m), isControl(experiment.id, m, 50))
      }
    }).pipe(Effect.provide(layer)))

  it.effect("creating a subscription ends the program's running experiment", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      yield* experiments.start(a.program.id, 10)
      const principal = yield* principalOf(a.apiKey.key)
      yield* (yield* Subscriptions).create(
        principal,
        { programId: a.program.id, url: "https://hooks.example/x", eventTypes: ["streak.broken"] },
        httpsOnly
      )
      assert.strictEqual((yield* Effect.flip(experiments.current(a.program.id)))._tag, "NotFound")
      assert.isFalse(yield* inControlGroup(a.program.id, hash("anyone")))
    }).pipe(Effect.provide(layer)))

  it.effect("deleting a subscription ends the program's running experiment", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      const subscriptions = yield* Subscriptions
      const principal = yield* principalOf(a.apiKey.key)
      const sub = yield* subscriptions.create(
        principal,
        { programId: a.program.id, url: "https://hooks.example/x", eventTypes: ["streak.broken"] },
        httpsOnly
      )
      yield* experiments.start(a.program.id, 10)
      yield* subscriptions.remove(principal, sub.id)
      assert.strictEqual((yield* Effect.flip(experiments.current(a.program.id)))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))

  it.effect("groups count live members active since the start; retained = active again ≥ 7 days after their first day since the start", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      yield* TestClock.setTime(Date.UTC(2026, 2, 10, 12, 0))
      const experiment = yield* experiments.start(a.program.id, 30)
      const expected = { control: { members: 0, retained: 0 }, treatment: { members: 0, retained: 0 } }
      const count = (userHash: string, outcome: "none" | "joined" | "retained") => {
        const g = isControl(experiment.id, userHash, 30) ? expected.control : expected.treatment
        if (outcome !== "none") g.members++
        if (outcome === "retained") g.retained++
      }
      for (let i = 0; i < 60; i++) {
        // Active on the start day and again exactly 7 days later: retained.
        yield* seed(a.program, `kept_${i}`, ["2026-03-10", "2026-03-17"])
        count(`kept_${i}`, "retained")
        // Back after 6 days only: took part, not retained.
        yield* seed(a.program, `lapsed_${i}`, ["2026-03-10", "2026-03-16"])
        count(`lapsed_${i}`, "joined")
        // Days before the start do not count as the first day: 03-12 is, and 03-14 is too soon.
        yield* seed(a.program, `returning_${i}`, ["2026-03-01", "2026-03-05", "2026-03-12", "2026-03-14"])
        count(`returning_${i}`, "joined")
        // Only active before the start: not part of the experiment.
        yield* seed(a.program, `gone_${i}`, ["2026-03-01", "2026-03-09"])
        count(`gone_${i}`, "none")
      }
      // The start in the member's own zone: 12:00 UTC is already 03-11 02:00 in Kiritimati (UTC+14),
      // so 03-10 there was before the start; in Los Angeles it is 03-10 05:00, so 03-10 counts.
      yield* seed(a.program, "kiritimati", ["2026-03-10"], { zone: "Pacific/Kiritimati" })
      count("kiritimati", "none")
      yield* seed(a.program, "los_angeles", ["2026-03-10"], { zone: "America/Los_Angeles" })
      count("los_angeles", "joined")
      // The test ledger never counts.
      yield* seed(a.program, "tester", ["2026-03-10", "2026-03-20"], { ledger: "test" })

      yield* TestClock.setTime(Date.UTC(2026, 2, 25))
      const result = yield* experiments.current(a.program.id)
      const rate = (g: { members: number; retained: number }) => (g.members === 0 ? null : g.retained / g.members)
      assert.deepStrictEqual(result.control, { ...expected.control, retention7d: rate(expected.control) })
      assert.deepStrictEqual(result.treatment, { ...expected.treatment, retention7d: rate(expected.treatment) })
      assert.strictEqual(result.control.members + result.treatment.members, 181)
      assert.isAbove(result.control.members, 20, "a 30% holdout of 181 members")

      const stopped = yield* experiments.stop(a.program.id)
      assert.deepStrictEqual(stopped.control, result.control)
      assert.strictEqual(stopped.experiment.endedAt?.getTime(), Date.UTC(2026, 2, 25))
    }).pipe(Effect.provide(layer)))

  it.effect("an empty group has a null retention rate", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const result = yield* Effect.flatMap(Experiments, (e) =>
        Effect.zipRight(e.start(a.program.id, 5), e.current(a.program.id)))
      assert.deepStrictEqual(result.control, { members: 0, retained: 0, retention7d: null })
      assert.deepStrictEqual(result.treatment, { members: 0, retained: 0, retention7d: null })
    }).pipe(Effect.provide(layer)))
})
