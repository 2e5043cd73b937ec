/**
 * Policy simulation replayed in worker threads (docs/operations.md#trying-a-policy-before-shipping-it),
 * on Postgres: for random histories over several pages of members and random policies, the answer
 * with workers is the answer replayed in the server's thread, and the default number of workers
 * follows the host's cores.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import * as Calendar from "@streaks/core/Calendar"
import * as Policy from "@streaks/core/Policy"
import { inThread, SimulationReplay } from "@streaks/core/SimulationReplay"
import * as StreakPolicies from "@streaks/core/StreakPolicies"
import { seedTenant } from "@streaks/storage-conformance/Fixtures"
import * as PgStorage from "@streaks/storage-pg/PgStorage"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Effect, FastCheck as fc, Layer, Schema } from "effect"
import * as SimulationWorkers from "../src/SimulationWorkers.js"

const ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati"]
const DAYS = 120

const policyArb = fc
  .record({
    cadence: fc.constantFrom<Policy.Cadence>("daily", "weekly", "monthly"),
    target: fc.integer({ min: 1, max: 3 }),
    restDays: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 2 }),
    max: fc.integer({ min: 0, max: 3 }),
    earnEvery: fc.integer({ min: 0, max: 4 })
  })
  .map((r) =>
    Schema.decodeSync(Policy.Policy)({
      cadence: r.cadence,
      target: r.cadence === "daily" ? 1 : r.target,
      restDays: r.cadence === "daily" ? r.restDays : [],
      freezes: { initial: Math.min(1, r.max), max: r.max, earnEvery: r.earnEvery }
    })
  )

/** 2,001 to 4,500 members (two or three pages), each in a zone with up to 25 active days among the last 120. */
const membersArb = fc.array(
  fc.record({
    zone: fc.nat({ max: ZONES.length - 1 }),
    days: fc.uniqueArray(fc.nat({ max: DAYS - 1 }), { maxLength: 25 })
  }),
  { minLength: StreakPolicies.simulationPage + 1, maxLength: StreakPolicies.simulationPage * 2 + 500 }
)

const stores = PgStorage.layer().pipe(Layer.provideMerge(PgTest.layer))

layer(Layer.mergeAll(stores, SimulationWorkers.layer(2)), { timeout: "300 seconds" })("simulation in workers", (it) => {
  it.effect.prop(
    "gives the answer of the replay in the server's thread, for any history and policy",
    [policyArb, policyArb, membersArb],
    ([current, proposed, members]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { program, project } = yield* seedTenant({ program: { status: "live", policy: current } })
        const today = Calendar.activityDay(Date.now(), "UTC", 0)
        const hashes = members.map((_, i) => `m${String(i).padStart(5, "0")}`)
        yield* sql`INSERT INTO streaks_streaks (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
          SELECT ${project.id}, ${program.id}, h, 'live', 0, 0, z, now()
          FROM unnest(${hashes}::text[], ${members.map((m) => ZONES[m.zone]!)}::text[]) AS t(h, z)`
        const days = members.flatMap((m, i) => m.days.map((d) => [hashes[i]!, Calendar.addDays(today, d - DAYS)]))
        yield* sql`INSERT INTO streaks_activity_days (project_id, program_id, user_hash, ledger, day)
          SELECT ${project.id}, ${program.id}, h, 'live', d::date
          FROM unnest(${days.map((x) => x[0]!)}::text[], ${days.map((x) => x[1]!)}::text[]) AS t(h, d)`

        const workers = yield* SimulationReplay
        assert.strictEqual(workers.concurrency, 2)
        const single = yield* Effect.provideService(StreakPolicies.make, SimulationReplay, inThread)
        const parallel = yield* Effect.provideService(StreakPolicies.make, SimulationReplay, workers)
        const request = { policy: Policy.toJson(proposed) }
        const inOne = yield* single.simulate(program.id, request)
        const inWorkers = yield* parallel.simulate(program.id, request)
        assert.strictEqual(inOne.actual.members, members.length)
        assert.deepStrictEqual(inWorkers, inOne)
        // A window cuts the same days on both paths.
        const window = { ...request, from: Calendar.addDays(today, -60), to: Calendar.addDays(today, -10) }
        assert.deepStrictEqual(yield* parallel.simulate(program.id, window), yield* single.simulate(program.id, window))
      }),
    { fastCheck: { numRuns: 4 } }
  )
})

describe("SimulationWorkers.defaultWorkers", () => {
  it("replays in the server's thread on up to three cores, and in two workers from four", () => {
    assert.deepStrictEqual([1, 2, 3, 4, 8].map(SimulationWorkers.defaultWorkers), [0, 0, 0, 2, 2])
  })
})
