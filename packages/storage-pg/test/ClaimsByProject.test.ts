/**
 * The claims as they run on a schema distributed by project (internal/claimsByProject.ts), on plain
 * Postgres: a table standing in for Citus' `pg_dist_partition` names the streaks table, so the
 * adapter claims project by project, and the conformance suite (its claims, SKIP LOCKED among
 * concurrent callers, the outbox's lease and next due instant) holds on that path too.
 */
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { StreakRow } from "@streaks/core/Domain"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { StreakStore, Transactor } from "@streaks/core/Ports"
import { storageConformance } from "@streaks/storage-conformance/StorageConformance"
import { Effect, Layer } from "effect"
import * as Migrations from "../src/Migrations.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

const distributed = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function*() {
    yield* sql`CREATE TABLE pg_dist_partition (logicalrelid oid NOT NULL)`
    yield* sql`INSERT INTO pg_dist_partition VALUES (to_regclass('streaks_streaks'))`
  })))

const storage = PgStorage.layer().pipe(
  Layer.provideMerge(distributed),
  Layer.provideMerge(Migrations.layer()),
  Layer.provideMerge(PgTest.layer)
)

storageConformance("postgres, claims by project", storage)

const row = (projectId: string, userHash: string, dueAt: Date) =>
  new StreakRow({
    projectId: projectId as ProjectId,
    programId: "prg_c" as ProgramId,
    userHash: userHash as UserHash,
    ledger: "live",
    run: 0,
    best: 0,
    timezone: "UTC",
    dueAt,
    updatedAt: dueAt
  })

layer(storage, { timeout: "120 seconds" })("claims by project", (it) => {
  it.effect("a sweep's calls take the projects in turn and hand out every due row once, each batch in due order", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const streaks = yield* StreakStore
      const tx = yield* Transactor
      for (const p of ["prj_a", "prj_b", "prj_c"]) {
        yield* sql`INSERT INTO streaks_workspaces VALUES ('wsp_c', 'c', 'pro', now()) ON CONFLICT DO NOTHING`
        yield* sql`INSERT INTO streaks_projects VALUES (${p}, 'wsp_c', ${`site_${p}`}, 'n', '{}', 'UTC', 'count', false, 'h', 's', now())`
      }
      const base = Date.parse("2024-01-01T00:00:00Z")
      // prj_a: 3 due rows, prj_b: none, prj_c: 2 due rows and 1 not yet due.
      yield* streaks.save([
        row("prj_a", "a1", new Date(base + 3)),
        row("prj_a", "a2", new Date(base + 1)),
        row("prj_a", "a3", new Date(base + 5)),
        row("prj_c", "c1", new Date(base + 2)),
        row("prj_c", "c2", new Date(base + 4)),
        row("prj_c", "c3", new Date(base + 60_000))
      ])
      const now = new Date(base + 1_000)
      const claimed: Array<ReadonlyArray<string>> = []
      for (let i = 0; i < 4; i++) {
        const batch = yield* tx.withTransaction(Effect.gen(function*() {
          const rows = yield* streaks.claimDue(now, 2)
          // Saved past now, as the sweep does, so the next call finds them no longer due.
          yield* streaks.save(rows.map((r) => new StreakRow({ ...r, dueAt: new Date(base + 120_000) })))
          return rows
        }))
        const times = batch.map((r) => r.dueAt!.getTime())
        assert.deepStrictEqual(times, [...times].sort((x, y) => x - y), "each batch in due order")
        claimed.push(batch.map((r) => r.userHash))
      }
      // prj_a first (a single cross-tenant claim would take a2 and c1, the two oldest of all), then
      // prj_a's last row with prj_c's oldest, then the rest of prj_c: each due row once.
      assert.deepStrictEqual(claimed, [["a2", "a1"], ["c1", "a3"], ["c2"], []])
    }))
})
