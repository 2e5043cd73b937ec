/**
 * Repairs, pauses and outage windows through the services (docs/streak-semantics.md#forgiveness),
 * on the memory adapter with `TestClock`: every rule, the due checks around them, the events
 * (`streak.repaired`), and each recomputation equal to the calculus from scratch.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream, TestClock } from "effect"
import { DueChecks } from "../src/DueChecks.js"
import { Forgiveness } from "../src/Forgiveness.js"
import * as Imports from "../src/Imports.js"
import { forgivenessOf } from "../src/internal/streakProgress.js"
import * as Policy from "../src/Policy.js"
import { DirectoryStore } from "../src/Ports.js"
import { StateQuery } from "../src/StateQuery.js"
import * as Streak from "../src/Streak.js"
import { StreakPolicies } from "../src/StreakPolicies.js"
import * as WebhookSamples from "../src/WebhookSamples.js"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import { at, codeOf, daysOf, drainOutbox, layer, liveTenant, rowOf, server } from "./support/pipeline.js"

const policy = (fields: Record<string, unknown>) => Schema.decodeSync(Policy.Policy)(fields)

const withPolicy = (p: Policy.Policy) => liveTenant({ program: { policy: p, mode: Policy.modeOf(p) } })

const act = (t: Tenant, userHash: string, iso: string) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(at(iso))
    return yield* server({ siteKey: t.project.siteKey, userHash, event: t.program.eventKey, ts: iso })
  })

const sweep = (iso: string) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(at(iso))
    return yield* (yield* DueChecks).run()
  })

const none = { atRisk: 0, broken: 0, freezesUsed: 0 }

const member = (t: Tenant, userHash: string) =>
  Effect.flatMap(StateQuery, (q) => q.memberStreak(t.program.id, userHash))

const statuses = (t: Tenant, userHash: string, from: string, to: string) =>
  Effect.map(
    Effect.flatMap(StreakPolicies, (p) => p.ledger(t.program.id, userHash, { from, to })),
    (l) => l.periods.map((p) => `${p.start} ${p.status}`)
  )

/** The stored row equals the calculus from scratch over the member's days and forgiveness. */
const fromScratch = (t: Tenant, userHash: string) =>
  Effect.gen(function*() {
    const row = (yield* rowOf(t, userHash, "live"))!
    const program = (yield* Effect.flatMap(DirectoryStore, (d) => d.program(t.program.id))).pipe((o) =>
      o._tag === "Some" ? o.value : t.program
    )
    const p = Policy.of(program)
    const days = (yield* daysOf(t, userHash, "live")) as Array<Streak.Summary["lastActiveDay"] & string>
    const scratch = Streak.fromDays(days, row.timezone, p, row.grants ?? [], forgivenessOf(row, program))
    assert.deepStrictEqual(
      [row.lastActiveDay, row.run, row.best, row.periodDays, row.freezes],
      [scratch.lastActiveDay, scratch.run, scratch.best, scratch.periodDays, scratch.freezes]
    )
  })

const repairing = policy({ repairWindowDays: 3, repairsPer30Days: 1 })

describe("repairs", () => {
  it.effect("a missed day repaired counts as kept; streak.repaired carries the period and the new current; the broken sent stays sent", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(repairing)
      for (const d of ["01", "02", "03"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      assert.deepStrictEqual(yield* sweep("2026-03-05T00:00:00Z"), { ...none, broken: 1 })
      const before = (yield* drainOutbox).map((m) => m.body.type).filter((type) => type.startsWith("streak."))
      assert.deepStrictEqual(before, ["streak.broken"])

      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      const repaired = yield* (yield* Forgiveness).repair(t.program.id, "u1", {
        period: "2026-03-04",
        reason: "support"
      })
      assert.strictEqual(repaired.userHash, "u1")
      const answer = yield* member(t, "u1")
      assert.deepStrictEqual([answer.current, answer.best, answer.pending, answer.todayDone], [4, 4, true, false])
      const events = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual(events.map((b) => b.type), ["streak.repaired"])
      assert.deepStrictEqual(events[0]!.data.period, { start: "2026-03-04", end: "2026-03-04" })
      assert.deepStrictEqual([events[0]!.data.current, events[0]!.data.streak], [4, { current: 4, best: 4 }])
      assert.deepStrictEqual(yield* statuses(t, "u1", "2026-03-03", "2026-03-05"), [
        "2026-03-03 kept",
        "2026-03-04 repaired",
        "2026-03-05 current"
      ])
      yield* fromScratch(t, "u1")

      // The chain is alive again: with no action on the 5th it breaks at the start of the 6th.
      assert.deepStrictEqual(yield* sweep("2026-03-06T00:00:00Z"), { ...none, broken: 1 })
      const broken = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual([broken[0]!.type, broken[0]!.data.endedRun], ["streak.broken", 4])
    }).pipe(Effect.provide(layer)))

  it.effect("NOT_REPAIRABLE changes nothing: a kept, current or future period, past the window, over the allowance, or no repairs allowed", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(repairing)
      const forgiveness = yield* Forgiveness
      for (const d of ["01", "02", "04", "06"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      yield* TestClock.setTime(at("2026-03-07T12:00:00Z"))
      const repair = (period: string) => codeOf(forgiveness.repair(t.program.id, "u1", { period, reason: "why" }))
      const rowBefore = yield* rowOf(t, "u1", "live")
      assert.strictEqual(yield* repair("2026-03-02"), "NOT_REPAIRABLE") // kept
      assert.strictEqual(yield* repair("2026-03-07"), "NOT_REPAIRABLE") // the current one
      assert.strictEqual(yield* repair("2026-03-09"), "NOT_REPAIRABLE") // not yet in the ledger
      assert.strictEqual(yield* repair("2026-03-03"), "NOT_REPAIRABLE") // 03-03 + 3 < 03-07
      assert.deepStrictEqual(yield* rowOf(t, "u1", "live"), rowBefore)
      // 03-05 + 3 ≥ 03-07: allowed, and it uses the allowance of the 30 days.
      yield* forgiveness.repair(t.program.id, "u1", { period: "2026-03-05", reason: "why" })
      assert.deepStrictEqual((yield* member(t, "u1")).current, 3)
      assert.strictEqual(yield* repair("2026-03-05"), "NOT_REPAIRABLE") // now repaired
      yield* act(t, "u1", "2026-03-08T12:00:00Z")
      yield* TestClock.setTime(at("2026-03-10T12:00:00Z"))
      assert.strictEqual(yield* repair("2026-03-09"), "NOT_REPAIRABLE") // over the allowance
      // 30 days after the first repair the allowance is back.
      yield* TestClock.setTime(at("2026-04-06T12:00:01Z"))
      yield* act(t, "u1", "2026-04-06T12:00:01Z")
      yield* act(t, "u1", "2026-04-08T12:00:00Z")
      assert.strictEqual((yield* member(t, "u1")).current, 1)
      yield* forgiveness.repair(t.program.id, "u1", { period: "2026-04-07", reason: "why" })
      assert.strictEqual((yield* member(t, "u1")).current, 3)
      yield* fromScratch(t, "u1")

      const closed = yield* withPolicy(policy({}))
      yield* act(closed, "u2", "2026-04-06T12:00:00Z")
      yield* TestClock.setTime(at("2026-04-08T12:00:00Z"))
      assert.strictEqual(
        yield* codeOf(forgiveness.repair(closed.program.id, "u2", { period: "2026-04-07", reason: "why" })),
        "NOT_REPAIRABLE"
      )
      assert.strictEqual(
        yield* codeOf(forgiveness.repair(closed.program.id, "u2", { period: "April", reason: "why" })),
        "INVALID_BODY"
      )
      assert.strictEqual(
        yield* codeOf(forgiveness.repair(closed.program.id, "u2", { period: "2026-04-07", reason: "" })),
        "INVALID_BODY"
      )
    }).pipe(Effect.provide(layer)))

  it.effect("a late action after a repair recomputes to the calculus from scratch", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ cadence: "weekly", target: 2, repairWindowDays: 10 }))
      yield* act(t, "u1", "2026-03-02T12:00:00Z")
      yield* act(t, "u1", "2026-03-03T12:00:00Z")
      yield* act(t, "u1", "2026-03-17T12:00:00Z")
      yield* act(t, "u1", "2026-03-18T12:00:00Z")
      yield* TestClock.setTime(at("2026-03-19T12:00:00Z"))
      assert.strictEqual((yield* member(t, "u1")).current, 1)
      yield* (yield* Forgiveness).repair(t.program.id, "u1", { period: "2026-03-11", reason: "bought" })
      assert.strictEqual((yield* member(t, "u1")).current, 3)
      yield* act(t, "u1", "2026-03-10T12:00:00Z") // late, into the repaired week
      yield* fromScratch(t, "u1")
      assert.strictEqual((yield* member(t, "u1")).current, 3)
    }).pipe(Effect.provide(layer)))

  // New York moves to summer time on 2026-03-08: local midnight is 05:00Z before, 04:00Z after.
  const newYork = (t: Tenant, userHash: string, iso: string) =>
    Effect.gen(function*() {
      yield* TestClock.setTime(at(iso))
      return yield* server({
        siteKey: t.project.siteKey,
        userHash,
        event: t.program.eventKey,
        ts: iso,
        tz: "America/New_York"
      })
    })
  const dueTypes = Effect.map(
    drainOutbox,
    (messages) => messages.map((m) => m.body).filter((b) => b.type === "streak.at_risk" || b.type === "streak.broken")
  )

  it.effect("a repaired period that continues a chain, with no action after it, is at risk and breaks as an action would (across a DST change)", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ repairWindowDays: 3, repairsPer30Days: 2, atRiskHour: 18 }))
      yield* newYork(t, "u1", "2026-03-05T17:00:00Z")
      yield* newYork(t, "u1", "2026-03-06T17:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-03-08T05:00:00Z"), { ...none, broken: 1 }) // 03-07 missed
      yield* drainOutbox
      // On 03-08 (local, the day of the change) support repairs 03-07: the chain goes on into 03-08.
      yield* TestClock.setTime(at("2026-03-08T15:00:00Z"))
      yield* (yield* Forgiveness).repair(t.program.id, "u1", { period: "2026-03-07", reason: "support" })
      yield* drainOutbox
      // 18:00 EDT is 22:00Z, midnight EDT 04:00Z: both one hour earlier in UTC than the day before.
      assert.deepStrictEqual(yield* sweep("2026-03-08T21:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-08T22:00:00Z"), { ...none, atRisk: 1 })
      assert.deepStrictEqual(yield* sweep("2026-03-09T03:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-09T04:00:00Z"), { ...none, broken: 1 })
      const sent = yield* dueTypes
      assert.deepStrictEqual(sent.map((b) => b.type), ["streak.at_risk", "streak.broken"])
      assert.deepStrictEqual(sent[0]!.data.localDate, "2026-03-08")
      assert.deepStrictEqual([sent[1]!.data.endedRun, sent[1]!.data.lastActiveDate], [3, "2026-03-06"])
      // Each is sent once.
      assert.deepStrictEqual(yield* sweep("2026-03-10T04:00:00Z"), none)
    }).pipe(Effect.provide(layer)))

  it.effect("a repaired period after a break starts a chain again: with no action after it, it is at risk and breaks as an action would (across a DST change)", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ repairWindowDays: 3, repairsPer30Days: 2, atRiskHour: 18 }))
      yield* newYork(t, "u1", "2026-03-05T17:00:00Z")
      yield* newYork(t, "u1", "2026-03-06T17:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-03-08T05:00:00Z"), { ...none, broken: 1 }) // 03-07 missed
      yield* drainOutbox
      // 03-07 and 03-08 missed; on 03-09 support repairs 03-08 only: a chain of 1 from 03-08.
      yield* TestClock.setTime(at("2026-03-09T14:00:00Z"))
      yield* (yield* Forgiveness).repair(t.program.id, "u1", { period: "2026-03-08", reason: "support" })
      yield* drainOutbox
      const answer = yield* member(t, "u1")
      assert.deepStrictEqual([answer.current, answer.pending], [1, true])
      assert.deepStrictEqual(yield* sweep("2026-03-09T21:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-09T22:00:00Z"), { ...none, atRisk: 1 })
      assert.deepStrictEqual(yield* sweep("2026-03-10T03:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-10T04:00:00Z"), { ...none, broken: 1 })
      const sent = yield* dueTypes
      assert.deepStrictEqual(sent.map((b) => b.type), ["streak.at_risk", "streak.broken"])
      assert.deepStrictEqual(sent[0]!.data.localDate, "2026-03-09")
      assert.deepStrictEqual([sent[1]!.data.endedRun, sent[1]!.data.lastActiveDate], [1, "2026-03-06"])
      assert.deepStrictEqual(yield* sweep("2026-03-11T04:00:00Z"), none)
      // An action on 03-11 starts a new chain whose break is announced in turn.
      yield* newYork(t, "u1", "2026-03-11T16:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-03-13T04:00:00Z"), { ...none, broken: 1 })
      yield* fromScratch(t, "u1")
    }).pipe(Effect.provide(layer)))
})

describe("repairs and recomputation", () => {
  it.effect("a policy change after the break of a run a repair started again, in the past and never swept, announces nothing", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ repairWindowDays: 3, repairsPer30Days: 2 }))
      for (const d of ["01", "02"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      assert.deepStrictEqual(yield* sweep("2026-03-04T00:00:00Z"), { ...none, broken: 1 }) // 03-03 missed
      // On 03-05 support repairs 03-04 (a chain of one), which breaks at the start of 03-06.
      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      yield* (yield* Forgiveness).repair(t.program.id, "u1", { period: "2026-03-04", reason: "support" })
      // No sweep until 03-07, when the policy changes: that break is in the past, and stays unsaid.
      yield* TestClock.setTime(at("2026-03-07T12:00:00Z"))
      yield* (yield* StreakPolicies).setPolicy(t.program.id, {
        repairWindowDays: 3,
        repairsPer30Days: 2,
        atRiskHour: 9
      })
      yield* drainOutbox
      assert.deepStrictEqual(yield* sweep("2026-03-07T12:00:00Z"), none)
    }).pipe(Effect.provide(layer)))
})

describe("history imports", () => {
  it.effect("an import recomputes a member with their repairs and pauses: both stay, and still count", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ repairWindowDays: 3, repairsPer30Days: 1 }))
      for (const d of ["05", "06", "08"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      yield* TestClock.setTime(at("2026-03-08T18:00:00Z"))
      const forgiveness = yield* Forgiveness
      yield* forgiveness.repair(t.program.id, "u1", { period: "2026-03-07", reason: "support" })
      yield* forgiveness.addPause(t.program.id, "u1", { start: "2026-03-10", end: "2026-03-12" })
      assert.strictEqual((yield* member(t, "u1")).current, 4)
      // Older history arrives by import: 03-03 and 03-04 join the chain, the repair still bridges 03-07.
      const imports = yield* Imports.Imports
      const lines = ["2026-03-03", "2026-03-04"].map((d) => JSON.stringify({ userHash: "u1", ts: `${d}T12:00:00Z` }))
      const job = yield* imports.start(t.program.id)
      yield* imports.finish(
        yield* imports.load(job, Imports.lines(Stream.make(lines.join("\n") + "\n")), { format: "ndjson" })
      )
      assert.strictEqual((yield* member(t, "u1")).current, 6)
      const row = (yield* rowOf(t, "u1", "live"))!
      assert.deepStrictEqual(row.repairs?.map((r) => r.period), ["2026-03-07"])
      assert.deepStrictEqual(row.pauses?.map((p) => [p.start, p.end]), [["2026-03-10", "2026-03-12"]])
      assert.deepStrictEqual(yield* statuses(t, "u1", "2026-03-06", "2026-03-08"), [
        "2026-03-06 kept",
        "2026-03-07 repaired",
        "2026-03-08 kept"
      ])
      yield* fromScratch(t, "u1")
    }).pipe(Effect.provide(Layer.merge(layer, Imports.layer.pipe(Layer.provide(layer))))))
})

describe("pauses", () => {
  it.effect("paused days neither add nor break nor use a freeze, nothing is owed nor at risk inside, and the bounds hold", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ freezes: { initial: 1, max: 1 } }))
      const forgiveness = yield* Forgiveness
      for (const d of ["01", "02", "03"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      const pause = yield* forgiveness.addPause(t.program.id, "u1", { start: "2026-03-04", end: "2026-03-06" })
      assert.deepStrictEqual([pause.start, pause.end, pause.id.startsWith("pau_")], ["2026-03-04", "2026-03-06", true])
      assert.deepStrictEqual((yield* forgiveness.pauses(t.program.id, "u1")).pauses, [pause])
      const add = (start: string, end: string) => codeOf(forgiveness.addPause(t.program.id, "u1", { start, end }))
      assert.strictEqual(yield* add("2026-03-06", "2026-03-08"), "PAUSE_OVERLAPS")
      assert.strictEqual(yield* add("2026-03-10", "2026-06-08"), "INVALID_BODY") // 91 days
      assert.strictEqual(yield* add("2026-03-09", "2026-03-08"), "INVALID_BODY")
      assert.strictEqual(yield* add("2026-02-01", "2026-03-02"), "INVALID_BODY") // ends before today
      assert.strictEqual(yield* add("2026-3-9", "2026-03-10"), "INVALID_BODY")
      const later = yield* forgiveness.addPause(t.program.id, "u1", { start: "2026-03-10", end: "2026-06-07" })

      for (const iso of ["2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z"]) {
        assert.deepStrictEqual(yield* sweep(iso), none)
      }
      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      const inside = yield* member(t, "u1")
      assert.deepStrictEqual([inside.current, inside.pending, inside.freezes], [3, false, 1])
      // The day after the pause is owed as usual.
      assert.deepStrictEqual(yield* sweep("2026-03-07T00:00:00Z"), { ...none, atRisk: 1 })
      yield* act(t, "u1", "2026-03-07T12:00:00Z")
      assert.deepStrictEqual([(yield* member(t, "u1")).current, (yield* member(t, "u1")).freezes], [4, 1])
      assert.deepStrictEqual(yield* statuses(t, "u1", "2026-03-03", "2026-03-07"), [
        "2026-03-03 kept",
        "2026-03-04 paused",
        "2026-03-05 paused",
        "2026-03-06 paused",
        "2026-03-07 kept"
      ])
      // A late action inside the pause moves nothing and recomputes the same.
      yield* act(t, "u1", "2026-03-05T12:00:00Z")
      yield* TestClock.setTime(at("2026-03-07T13:00:00Z"))
      assert.strictEqual((yield* member(t, "u1")).current, 4)
      yield* fromScratch(t, "u1")

      assert.strictEqual(yield* codeOf(forgiveness.removePause(t.program.id, "u1", pause.id)), "PAUSE_STARTED")
      assert.strictEqual(yield* codeOf(forgiveness.removePause(t.program.id, "u1", "pau_unknown")), "NOT_FOUND")
      yield* forgiveness.removePause(t.program.id, "u1", later.id)
      assert.deepStrictEqual((yield* forgiveness.pauses(t.program.id, "u1")).pauses, [pause])
      assert.deepStrictEqual(
        yield* drainOutbox.pipe(
          Effect.map((ms) => ms.map((m) => m.body.type).filter((type) => type.startsWith("streak.")))
        ),
        ["streak.at_risk"]
      )
    }).pipe(Effect.provide(layer)))
})

describe("outage windows", () => {
  it.effect("a window declared afterwards forgives the missed day whose last chance it overlapped and restores the broken streak (one streak.repaired)", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({}))
      const forgiveness = yield* Forgiveness
      for (const d of ["01", "02", "03"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      for (const d of ["01", "02", "03", "04"]) yield* act(t, "u2", `2026-03-${d}T12:00:00Z`)
      assert.deepStrictEqual(yield* sweep("2026-03-05T00:00:00Z"), { ...none, atRisk: 1, broken: 1 })
      yield* drainOutbox
      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      const outage = yield* forgiveness.addOutage(t.program.id, {
        start: "2026-03-04T10:00:00Z",
        end: "2026-03-04T14:00:00Z",
        reason: "database down"
      })
      assert.deepStrictEqual(
        [outage.start, outage.end, outage.reason, outage.restored, outage.id.startsWith("out_")],
        ["2026-03-04T10:00:00.000Z", "2026-03-04T14:00:00.000Z", "database down", 1, true]
      )
      assert.deepStrictEqual((yield* forgiveness.outages(t.program.id)).outages, [outage])
      const events = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual(events.map((b) => [b.type, b.data.userHash, b.data.period, b.data.current]), [
        ["streak.repaired", "u1", { start: "2026-03-04", end: "2026-03-04" }, 3]
      ])
      const u1 = yield* member(t, "u1")
      assert.deepStrictEqual([u1.current, u1.pending], [3, true])
      assert.deepStrictEqual(yield* statuses(t, "u1", "2026-03-04", "2026-03-05"), [
        "2026-03-04 forgiven",
        "2026-03-05 current"
      ])
      assert.deepStrictEqual(yield* statuses(t, "u2", "2026-03-04", "2026-03-04"), ["2026-03-04 kept"])
      assert.strictEqual((yield* member(t, "u2")).current, 4)
      yield* fromScratch(t, "u1")
      yield* fromScratch(t, "u2")
      // The restored chain is owed the 5th and breaks at the 6th as usual.
      assert.deepStrictEqual(yield* sweep("2026-03-06T00:00:00Z"), { ...none, broken: 2 })
    }).pipe(Effect.provide(layer)))

  it.effect("while now is inside a window nothing fires; what is still owed fires when it closes", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({}))
      const forgiveness = yield* Forgiveness
      for (const d of ["01", "02", "03", "04"]) yield* act(t, "u1", `2026-03-${d}T12:00:00Z`)
      yield* TestClock.setTime(at("2026-03-06T00:00:00Z"))
      const outage = yield* forgiveness.addOutage(t.program.id, {
        start: "2026-03-06T00:00:00Z",
        end: "2026-03-06T03:00:00Z",
        reason: "deploy"
      })
      assert.strictEqual(outage.restored, 0)
      // 03-05 was missed before the window (its last chance day does not overlap it): not forgiven,
      // but its break is held while the window is open.
      assert.deepStrictEqual(yield* sweep("2026-03-06T00:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-06T02:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-06T03:00:00Z"), { ...none, broken: 1 })
    }).pipe(Effect.provide(layer)))

  it.effect("bounds: start before end, at most 7 days, not in the future; INVALID_BODY changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({}))
      const forgiveness = yield* Forgiveness
      yield* TestClock.setTime(at("2026-03-10T00:00:00Z"))
      const add = (start: string, end: string, reason = "r") =>
        codeOf(forgiveness.addOutage(t.program.id, { start, end, reason }))
      assert.strictEqual(yield* add("2026-03-05T00:00:00Z", "2026-03-05T00:00:00Z"), "INVALID_BODY")
      assert.strictEqual(yield* add("2026-03-01T00:00:00Z", "2026-03-08T00:00:01Z"), "INVALID_BODY")
      assert.strictEqual(yield* add("2026-03-10T00:00:01Z", "2026-03-11T00:00:00Z"), "INVALID_BODY")
      assert.strictEqual(yield* add("yesterday", "2026-03-11T00:00:00Z"), "INVALID_BODY")
      assert.strictEqual(yield* add("2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z", ""), "INVALID_BODY")
      assert.deepStrictEqual((yield* forgiveness.outages(t.program.id)).outages, [])
      // Ongoing: it may end in the future.
      const ok = yield* forgiveness.addOutage(t.program.id, {
        start: "2026-03-09T00:00:00Z",
        end: "2026-03-12T00:00:00Z",
        reason: "r"
      })
      assert.strictEqual(ok.end, "2026-03-12T00:00:00.000Z")
    }).pipe(Effect.provide(layer)))
})

describe("webhook samples", () => {
  it.effect("streak.repaired has a sample of the delivery's shape: the period and the new current", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({}))
      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      const [sample] = (yield* WebhookSamples.samples(t.project, t.program, "streak.repaired")) as ReadonlyArray<
        { readonly type: string; readonly data: Record<string, unknown> }
      >
      assert.strictEqual(sample!.type, "streak.repaired")
      assert.deepStrictEqual(sample!.data.period, { start: "2026-03-04", end: "2026-03-04" })
      assert.deepStrictEqual([sample!.data.current, sample!.data.streak], [8, { current: 8, best: 8 }])
    }).pipe(Effect.provide(layer)))
})
