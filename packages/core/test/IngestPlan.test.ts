import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck as fc, Layer, Option, TestClock } from "effect"
import * as Calendar from "../src/Calendar.js"
import { type StreakRow } from "../src/Domain.js"
import type { Action } from "../src/EventInput.js"
import * as Ids from "../src/Ids.js"
import * as Ingest from "../src/Ingest.js"
import * as IngestPlan from "../src/IngestPlan.js"
import type { Snapshot } from "../src/IngestStore.js"
import * as Streak from "../src/Streak.js"
import { makeKey, makeProgram, makeProject, makeRow, makeWorkspace } from "@streaks/storage-conformance/Fixtures"
import { at, base, daysOf, rowOf, server, tenant } from "./support/pipeline.js"

const workspace = makeWorkspace()
const project = makeProject(workspace.id)
const program = makeProgram(project.id, { status: "live", milestones: [] })
const BASE = Date.parse("2026-03-01T12:00:00Z")
const DAY = 86_400_000
const now = new Date(BASE + 40 * DAY)

let counter = 0
const ids: IngestPlan.Ids = {
  event: () => Ids.unsafe("EventId", `evt_${++counter}`),
  message: () => Ids.unsafe("MessageId", `msg_${++counter}`)
}

const work = (userHash: string, offset: number): IngestPlan.Work => ({
  project,
  program,
  door: "server",
  now,
  action: {
    userHash: userHash as Ids.UserHash,
    eventType: "streak_interaction",
    ts: new Date(BASE + offset * DAY),
    test: false
  } satisfies Action
})

/** What a store would read for `group`, with each member's row as given. */
const snapshotOf = (group: ReadonlyArray<IngestPlan.Work>, rows: ReadonlyMap<string, StreakRow>): Snapshot => ({
  members: group.map((w) => {
    const key = makeKey(program, { userHash: w.action.userHash })
    return {
      member: { userHash: w.action.userHash, timezone: Option.none() },
      streak: { key, row: rows.get(w.action.userHash) ?? makeRow(key), achieved: [] }
    }
  }),
  claims: []
})

/** Plans a group against stored rows and days, reading history when asked, as `Ingest` does. */
const planGroup = (
  group: ReadonlyArray<IngestPlan.Work>,
  rows: ReadonlyMap<string, StreakRow>,
  days: ReadonlyMap<string, ReadonlyArray<Calendar.LocalDate>>
) => {
  const input = { work: group, snapshot: snapshotOf(group, rows), history: new Map(), ids }
  const first = IngestPlan.plan(input)
  if (first._tag === "Needs" && first.programs.length > 0) throw new Error("no milestones in these programs")
  const result = first._tag === "Planned" ? first : IngestPlan.plan({
    ...input,
    history: new Map(
      first.keys.map((
        k
      ) => [`${k.projectId}\u0000${k.programId}\u0000${k.userHash}\u0000${k.ledger}`, days.get(k.userHash) ?? []])
    )
  })
  if (result._tag !== "Planned") throw new Error("history was given")
  return result
}

const summaries = (rows: ReadonlyMap<string, StreakRow>) =>
  new Map([...rows].map(([u, r]) => [u, { lastActiveDay: r.lastActiveDay, run: r.run, best: r.best }]))

describe("IngestPlan.plan", () => {
  it("incremental = from scratch: one group, one action at a time, any arrival order across members", () =>
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 0, max: 30 })), {
          minLength: 1,
          maxLength: 40
        }),
        fc.integer(),
        (actions, seed) => {
          const group = actions.map(([u, d]) => work(u, d))
          // All at once, from empty rows.
          const once = planGroup(group, new Map(), new Map())
          const together = new Map(once.changes.rows.map((r) => [r.userHash as string, r]))
          // One action per group, each against what the previous ones committed.
          const rows = new Map<string, StreakRow>()
          const days = new Map<string, Array<Calendar.LocalDate>>()
          for (const w of group) {
            const r = planGroup([w], rows, days)
            for (const row of r.changes.rows) rows.set(row.userHash, row)
            for (const d of r.changes.days) days.set(d.key.userHash, [...(days.get(d.key.userHash) ?? []), d.day])
          }
          assert.deepStrictEqual(summaries(together), summaries(rows))
          // Members' actions interleaved in another order: each member's own order kept.
          const shuffled = [...group].sort((x, y) =>
            ((x.action.userHash.charCodeAt(0) * 7919 + seed) % 3) -
            ((y.action.userHash.charCodeAt(0) * 7919 + seed) % 3)
          )
          const reordered = planGroup(shuffled, new Map(), new Map())
          assert.deepStrictEqual(
            summaries(new Map(reordered.changes.rows.map((r) => [r.userHash as string, r]))),
            summaries(together)
          )
          // And both are the calculus from scratch over each member's distinct days.
          for (const [u, row] of together) {
            const mine = actions.filter(([m]) => m === u).map(([, d]) => Calendar.localDate(BASE + d * DAY, "UTC"))
            const expected = Streak.fromDays(mine, "UTC")
            assert.deepStrictEqual([row.lastActiveDay, row.run, row.best], [
              expected.lastActiveDay,
              expected.run,
              expected.best
            ])
          }
          // Each distinct day is recorded once; every action is logged, counted or not.
          assert.strictEqual(once.changes.days.length, new Set(actions.map(([u, d]) => `${u} ${d}`)).size)
          assert.strictEqual(once.changes.actions.length, actions.length)
        }
      ),
      { numRuns: 200, seed: 44 }
    ))

  it("a defect while planning one action fails it alone; the others are planned as if it were not there", () => {
    const group = [work("a", 1), work("boom", 1), work("a", 2)]
    const result = IngestPlan.plan({
      work: group,
      snapshot: snapshotOf(group, new Map()),
      history: new Map(),
      ids,
      check: (w) => {
        if (w.action.userHash === "boom") throw new Error("injected defect")
      }
    })
    assert.strictEqual(result._tag, "Planned")
    if (result._tag !== "Planned") return
    assert.deepStrictEqual(result.answers.map((a) => a._tag), ["Applied", "Defect", "Applied"])
    assert.deepStrictEqual(result.changes.rows.map((r) => [r.userHash, r.run]), [["a", 2]])
    assert.deepStrictEqual(result.changes.actions.map((r) => r.userHash), ["a", "a"])
  })
})

describe("Ingest: a planning defect fails one action", () => {
  let armed = true
  const layer = Ingest.layerWith({
    planCheck: (w) => {
      if (w.action.userHash === "boom" && armed) throw new Error("injected defect")
    }
  }).pipe(Layer.provideMerge(base))

  it.effect("a keyed action whose planning died frees its key: the retry runs at once, not a 409", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      const body = { siteKey: t.project.siteKey, userHash: "boom", event: t.program.eventKey, idempotencyKey: "k-boom" }
      armed = true
      const failed = yield* Effect.exit(server(body))
      assert.isTrue(Exit.isFailure(failed) && Cause.isDie(failed.cause))
      armed = false
      assert.deepStrictEqual((yield* server(body)).body, { ok: true, counted: true })
      assert.strictEqual((yield* rowOf(t, "boom", "live"))?.run, 1)
      armed = true
    }).pipe(Effect.provide(layer)))

  it.effect("of five concurrent actions, the one whose planning dies answers a defect; the four others commit", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      const exits = yield* Effect.forEach(
        ["m1", "m2", "boom", "m3", "m4"],
        (userHash) => Effect.exit(server({ siteKey: t.project.siteKey, userHash, event: t.program.eventKey })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        exits.map((e) => (Exit.isSuccess(e) ? "ok" : Cause.isDie(e.cause) ? "defect" : "failure")),
        ["ok", "ok", "defect", "ok", "ok"]
      )
      for (const m of ["m1", "m2", "m3", "m4"]) assert.strictEqual((yield* rowOf(t, m, "live"))?.run, 1)
      // Its group rolled back: not even the empty row its lock created is left.
      assert.isUndefined(yield* rowOf(t, "boom", "live"))
      assert.deepStrictEqual(yield* daysOf(t, "boom", "live"), [])
    }).pipe(Effect.provide(layer)))
})
