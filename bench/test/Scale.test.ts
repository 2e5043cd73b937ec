import { SqlClient } from "@effect/sql"
import { Migrations } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import * as Scale from "../src/scale.js"

describe("sizesOf", () => {
  it("reads BENCH_SCALE's sizes in members, ascending, each a whole number of members per project", () => {
    expect(Scale.sizesOf("10m,1m")).toEqual([1_000_000, 10_000_000])
    expect(Scale.sizesOf("200k")).toEqual([200_000])
    expect(Scale.sizesOf("1m, 1M")).toEqual([1_000_000])
    expect(Scale.sizesOf("10")).toEqual([12])
    for (const size of Scale.sizesOf("1.5m,250k")) expect(size % Scale.PROJECTS).toBe(0)
  })

  it("refuses what is not a size", () => {
    expect(() => Scale.sizesOf("big")).toThrow(/not a size/)
    expect(() => Scale.sizesOf("1g")).toThrow(/not a size/)
  })
})

describe("membersOf", () => {
  it("counts a lean fill's action log per member of the first project, every other table per member", () => {
    expect(Scale.membersOf("streaks_actions", 1_000_000, true)).toBe(1_000_000 / Scale.PROJECTS)
    expect(Scale.membersOf("streaks_actions", 1_000_000, false)).toBe(1_000_000)
    expect(Scale.membersOf("streaks_activity_days", 1_000_000, true)).toBe(1_000_000)
  })
})

describe("timeMigrations", () => {
  it("puts migration 0017 back and applies it again, leaving the due index by instant and key", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const db = yield* PgTest.PgTestDatabase
      yield* Migrations.run()
      const timed = yield* Effect.promise(() => Scale.timeMigrations(Redacted.value(db.url)))
      expect(timed.applied).toEqual(["0017_due_claims_in_key_order"])
      const [index] = yield* sql<{ def: string }>`SELECT pg_get_indexdef('streaks_streaks_due'::regclass) AS def`
      expect(index!.def).toContain("(due_at, project_id, program_id, user_hash, ledger) WHERE (due_at IS NOT NULL)")
      const recorded = yield* sql<
        { id: number }
      >`SELECT migration_id AS id FROM streaks_migrations WHERE migration_id = 17`
      expect(recorded).toHaveLength(1)
    }).pipe(Effect.provide(PgTest.layer), Effect.runPromise))

  it("refuses when a later migration is recorded, since the migrator would apply nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const db = yield* PgTest.PgTestDatabase
      yield* Migrations.run()
      yield* sql`INSERT INTO streaks_migrations (migration_id, name) VALUES (18, 'later')`
      const failed = yield* Effect.promise(() =>
        Scale.timeMigrations(Redacted.value(db.url)).then(() => undefined, (e: unknown) => String(e))
      )
      expect(failed).toMatch(/latest applied is 18/)
      const [index] = yield* sql<{ def: string }>`SELECT pg_get_indexdef('streaks_streaks_due'::regclass) AS def`
      expect(index!.def).toContain("(due_at, project_id, program_id, user_hash, ledger)")
    }).pipe(Effect.provide(PgTest.layer), Effect.runPromise))

  it("is the latest migration of the schema", () => {
    expect(() => Scale.checkTimedMigration()).not.toThrow()
  })
})
