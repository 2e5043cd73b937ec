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
      assert.strictEqual((yield* experiments.current(a.program.id)).id, first.id)
      const stopped = yield* experiments.stop(a.program.id)
      assert.isDefined(stopped.endedAt)
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
      assert.strictEqual(stopped.endedAt, new Date(Date.UTC(2026, 2, 25)).toISOString())
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

describe("Experiments: the Proof report", () => {
  // A name of the wanted group under this experiment (the groups are a hash: search a few names).
  const nameIn = (experimentId: string, control: boolean, prefix: string) => {
    for (let i = 0;; i++) if (isControl(experimentId, `${prefix}${i}`, 50) === control) return `${prefix}${i}`
  }

  it.effect("enrolment per zone, maturity against the last complete day, retention windows, pre-period and SRM", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      yield* TestClock.setTime(Date.UTC(2026, 2, 1))
      const started = yield* experiments.start(a.program.id, 50)
      const [ctlA, ctlE, trtB, trtL] = [
        nameIn(started.id, true, "a"),
        nameIn(started.id, true, "e"),
        nameIn(started.id, false, "b"),
        nameIn(started.id, false, "l")
      ]
      // Control A: enrolled 03-01; back on 03-02 (h=1) and 03-09 (h=7); two days in the pre-period.
      yield* seed(a.program, ctlA, ["2026-02-20", "2026-02-25", "2026-03-01", "2026-03-02", "2026-03-09"])
      // Control E: enrolled 03-15, too late to mature at any horizon by 03-19.
      yield* seed(a.program, ctlE, ["2026-03-15"])
      // Treatment B: enrolled 03-05, never back.
      yield* seed(a.program, trtB, ["2026-03-05"])
      // Treatment L in Los Angeles: the start instant is 02-28 there, so 02-28 enrols them.
      yield* seed(a.program, trtL, ["2026-02-28", "2026-03-01"], { zone: "America/Los_Angeles" })
      // Neither active since the start, nor on the live ledger: in no cohort.
      yield* seed(a.program, nameIn(started.id, true, "c"), ["2026-02-27"])
      yield* seed(a.program, nameIn(started.id, false, "d"), ["2026-03-03"], { ledger: "test" })

      yield* TestClock.setTime(Date.UTC(2026, 2, 20, 12))
      const result = yield* experiments.current(a.program.id)
      assert.deepStrictEqual(result.control, { members: 2, retained: 1, retention7d: 0.5 })
      assert.deepStrictEqual(result.treatment, { members: 2, retained: 0, retention7d: 0 })
      assert.deepStrictEqual(result.report.horizons.map((h) => h.horizon), [1, 7, 14, 30])
      const [h1, h7, h14, h30] = result.report.horizons
      // Last complete day 03-19: h = 1 needs e ≤ 03-12, h = 7 needs e ≤ 03-06, h = 14 needs e ≤ 02-27.
      assert.deepStrictEqual(h1!.control, { n: 1, retained: 1, rate: 1 })
      // L (enrolled 02-28 in their zone) is back on 03-01; B is not.
      assert.deepStrictEqual(h1!.treatment, { n: 2, retained: 1, rate: 0.5 })
      assert.deepStrictEqual(h7!.control, { n: 1, retained: 1, rate: 1 })
      assert.deepStrictEqual(h7!.treatment, { n: 2, retained: 0, rate: 0 })
      assert.deepStrictEqual(h14!.treatment, { n: 0, retained: 0, rate: null })
      assert.deepStrictEqual(h30!.control, { n: 0, retained: 0, rate: null })
      // Both groups matured at h = 1 and 7: the statistics are there; at 14 and 30 they are null.
      assert.isNotNull(h1!.difference)
      assert.closeTo(h1!.difference!.estimate, -0.5, 1e-12)
      assert.isNull(h14!.difference)
      assert.isNull(h14!.pValue)
      assert.isNull(h14!.mde)
      // Relative lift (0 − 1) / 1 at h = 7.
      assert.closeTo(h7!.relative!.estimate, -1, 1e-12)
      // CUPED needs two matured members per group: control has one.
      assert.isNull(h1!.cuped)
      assert.deepStrictEqual(
        { control: result.report.srm.control, treatment: result.report.srm.treatment },
        { control: 2, treatment: 2 }
      )
      assert.strictEqual(result.report.srm.chiSquare, 0)
      assert.strictEqual(result.report.srm.pValue, 1)
      assert.isFalse(result.report.srm.mismatch)
    }).pipe(Effect.provide(layer)))

  it.effect("CUPED per horizon uses the pre-period days; an experiment's report stays readable after it ends", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const experiments = yield* Experiments
      yield* TestClock.setTime(Date.UTC(2026, 2, 1))
      const started = yield* experiments.start(a.program.id, 50)
      const members: Array<readonly [string, ReadonlyArray<string>]> = []
      for (const [i, control] of [[0, true], [1, true], [2, true], [3, false], [4, false], [5, false]] as const) {
        const name = nameIn(started.id, control, `m${i}_`)
        // i pre-period days, then enrolment on 03-01 and i more days after it.
        const pre = Array.from({ length: i }, (_, k) => `2026-02-${String(10 + k).padStart(2, "0")}`)
        const after = Array.from({ length: i }, (_, k) => `2026-03-${String(2 + k).padStart(2, "0")}`)
        members.push([name, [...pre, "2026-03-01", ...after]])
      }
      for (const [name, days] of members) yield* seed(a.program, name, days)
      yield* TestClock.setTime(Date.UTC(2026, 3, 15))
      yield* experiments.stop(a.program.id)
      yield* TestClock.setTime(Date.UTC(2026, 5, 1))
      const got = yield* experiments.get(a.program.id, started.id)
      assert.strictEqual(got.endedAt, new Date(Date.UTC(2026, 3, 15)).toISOString())
      const h7 = got.report.horizons[1]!
      assert.strictEqual(h7.control.n, 3)
      assert.strictEqual(h7.treatment.n, 3)
      // y = active days in [03-01, 03-08) = 1 + i: perfectly explained by x = i, so CUPED removes all variance.
      assert.isNotNull(h7.cuped)
      assert.closeTo(h7.cuped!.varianceReduction!, 1, 1e-9)
      assert.closeTo(h7.cuped!.difference.estimate, 0, 1e-9)
      const history = yield* experiments.history(a.program.id)
      assert.deepStrictEqual(history.map((e) => e.id), [started.id])
      assert.strictEqual((yield* Effect.flip(experiments.get(a.program.id, "exp_unknown")))._tag, "NotFound")
    }).pipe(Effect.provide(layer)))
})
