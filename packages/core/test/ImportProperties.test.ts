/**
 * History import agrees with ingest: for random histories (members, days, zones, idempotency keys
 * repeated within and across members), importing them then reading gives what ingesting them one
 * by one through the customer REST door then reading gives, under several policies: the same
 * streaks, bests, days and zones. Milestones: the import marks those the member's best reached,
 * which include every one ingest marked; and the import writes no outbound message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, Schema, Stream, TestClock, TestContext } from "effect"
import { StreakKey } from "../src/Domain.js"
import * as Imports from "../src/Imports.js"
import type { UserHash } from "../src/Ids.js"
import * as Policy from "../src/Policy.js"
import { AchievementStore, MemberStore, StreakStore } from "../src/Ports.js"
import { StateQuery } from "../src/StateQuery.js"
import { api, drainOutbox, layer, liveTenant } from "./support/pipeline.js"

const NOW = new Date("2026-03-31T15:00:00Z")
const DAY = 86_400_000

const policies = ([
  {},
  { freezes: { initial: 1, max: 2, earnEvery: 3 } },
  { cadence: "weekly", target: 2 },
  { dayStartHour: 4, restDays: [6, 7] }
] as ReadonlyArray<unknown>).map((p) => Schema.decodeUnknownSync(Policy.Policy)(p))

interface Line {
  readonly userHash: string
  readonly ts: string
  readonly tz?: string
  readonly idempotencyKey?: string
}

const line = fc.record({
  member: fc.integer({ min: 0, max: 3 }),
  daysAgo: fc.integer({ min: 0, max: 50 }),
  minute: fc.integer({ min: 0, max: 24 * 60 - 1 }),
  tz: fc.constantFrom(undefined, undefined, "UTC", "Asia/Tokyo", "America/New_York", "Pacific/Kiritimati"),
  key: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined })
}).map(({ daysAgo, key, member, minute, tz }): Line => {
  // Never more than a minute ahead of now: ingest refuses actions dated too far ahead.
  const at = Math.min(NOW.getTime() - daysAgo * DAY - (NOW.getTime() % DAY) + minute * 60_000, NOW.getTime() - 60_000)
  return {
    userHash: `m${member}`,
    ts: new Date(at).toISOString(),
    ...(tz === undefined ? {} : { tz }),
    ...(key === undefined ? {} : { idempotencyKey: `k${key}` })
  }
})

const withImports = Layer.merge(layer, Imports.layer.pipe(Layer.provide(layer)))

/** What a reader sees of every member: the REST answer, the days, the zone, the milestones reached. */
const readAll = (programId: string, projectId: string) =>
  Effect.gen(function*() {
    const state = yield* StateQuery
    const streaks = yield* StreakStore
    const members = yield* MemberStore
    const achievements = yield* AchievementStore
    const out: Record<string, unknown> = {}
    for (let m = 0; m <= 3; m++) {
      const userHash = `m${m}` as UserHash
      const key = new StreakKey({
        projectId: projectId as never,
        programId: programId as never,
        userHash,
        ledger: "live"
      })
      const [member] = yield* members.lookup([{ projectId: projectId as never, userHash }])
      const [achieved] = yield* achievements.achieved([key])
      // The program's id differs between the two stores; everything else must not.
      const { programId: _, ...streak } = yield* state.memberStreak(programId, userHash)
      out[userHash] = {
        streak,
        days: yield* streaks.days(key),
        zone: member!.timezone,
        achieved: achieved!.map((a) => a.milestoneId).sort()
      }
    }
    return out as Record<string, { streak: { best: number }; achieved: Array<string> }>
  })

/** The history in a fresh store, either ingested action by action or imported as one NDJSON file. */
const run = (lines: ReadonlyArray<Line>, policy: Policy.Policy, how: "ingest" | "import") =>
  Effect.gen(function*() {
    yield* TestClock.setTime(NOW)
    const t = yield* liveTenant({ program: { policy, mode: Policy.modeOf(policy) } })
    if (how === "ingest") {
      for (const l of lines) yield* api(t, { ...l })
    } else {
      const imports = yield* Imports.Imports
      const job = yield* imports.start(t.program.id)
      const text = lines.map((l) => JSON.stringify(l)).join("\n")
      const loaded = yield* imports.load(job, Imports.lines(Stream.make(text)), { format: "ndjson", batchLines: 7 })
      const done = yield* imports.finish(loaded)
      assert.strictEqual(done.imported + done.duplicates, lines.length)
    }
    const milestones = t.program.milestones
    return { read: yield* readAll(t.program.id, t.project.id), outbox: (yield* drainOutbox).length, milestones }
  }).pipe(Effect.provide(withImports))

describe("history import", () => {
  it.effect("import then read = ingest one by one then read, for random histories and policies", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.array(line, { minLength: 0, maxLength: 40 }),
          fc.integer({ min: 0, max: policies.length - 1 }),
          async (lines, p) => {
            const policy = policies[p]!
            const [ingested, imported] = await Promise.all([
              Effect.runPromise(Effect.provide(run(lines, policy, "ingest"), TestContext.TestContext)),
              Effect.runPromise(Effect.provide(run(lines, policy, "import"), TestContext.TestContext))
            ])
            for (const member of Object.keys(ingested.read)) {
              const a = ingested.read[member]!
              const b = imported.read[member]!
              assert.deepStrictEqual({ ...b, achieved: [] }, { ...a, achieved: [] }, member)
              // Ingest judges milestones on the streak at receipt; the import on the best the history reached.
              for (const id of a.achieved) assert.include(b.achieved, id, member)
              const reached = imported.milestones.filter((m) => m.target <= b.streak.best).map((m) => m.id).sort()
              assert.deepStrictEqual(b.achieved, reached, member)
            }
            assert.strictEqual(imported.outbox, 0)
          }
        ),
        { numRuns: 60 }
      )
    ))
})
