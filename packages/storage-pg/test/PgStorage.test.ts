/**
 * The Postgres adapter passes the same conformance suite as every storage adapter, plus the
 * checks that only make sense on Postgres (driver value conversions, error mapping, prefixes).
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { unsafeLocalDate } from "@streaks/core/Calendar"
import { defaultSettings, Program, StreakKey, StreakRow, Workspace } from "@streaks/core/Domain"
import type { ProgramId, ProjectId, UserHash, WorkspaceId } from "@streaks/core/Ids"
import { DirectoryStore, IdempotencyStore, StreakStore, Transactor } from "@streaks/core/Ports"
import { storageConformance } from "@streaks/storage-conformance/StorageConformance"
import { Effect, Layer, Option } from "effect"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

storageConformance("postgres", PgStorage.layer().pipe(Layer.provide(PgTest.layer)))

const key = (userHash: string) =>
  new StreakKey({
    projectId: "prj_pg" as ProjectId,
    programId: "prg_pg" as ProgramId,
    userHash: userHash as UserHash,
    ledger: "live"
  })

layer(PgStorage.layer().pipe(Layer.provideMerge(PgTest.layer)), { timeout: "120 seconds" })(
  "PgStorage on Postgres",
  (it) => {
    it.effect("local dates round-trip unchanged whatever the session and process time zones", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const streaks = yield* StreakStore
        const tx = yield* Transactor
        const k = key("tz-member")
        const days = ["0001-01-01", "2024-02-29", "2024-03-31", "9999-12-31"].map(unsafeLocalDate)
        // A session zone far from UTC: a driver-parsed `date` would shift by a day.
        const stored = yield* tx.withTransaction(Effect.gen(function*() {
          yield* sql`SET LOCAL TIME ZONE 'Pacific/Kiritimati'`
          const [row] = yield* streaks.lock([{ key: k, timezone: "Pacific/Kiritimati" }])
          assert.deepStrictEqual(yield* streaks.addDays(days.map((day) => ({ key: k, day }))), days.map(() => true))
          yield* streaks.save([
            new StreakRow({
              ...row!,
              lastActiveDay: days[2]!,
              atRiskNotifiedFor: days[1]!,
              run: 1,
              best: 1,
              dueAt: new Date("2024-04-01T10:00:00.123Z")
            })
          ])
          return yield* streaks.days(k)
        }))
        assert.deepStrictEqual(stored, days)
        assert.deepStrictEqual(yield* streaks.days(k, { from: days[1]!, to: days[2]! }), [days[1], days[2]])
        const rows = yield* streaks.rows({ keys: [k] })
        assert.strictEqual(rows.length, 1)
        const row = rows[0]!
        assert.strictEqual(row.lastActiveDay, "2024-03-31")
        assert.strictEqual(row.atRiskNotifiedFor, "2024-02-29")
        assert.strictEqual(row.brokenNotifiedAfter, undefined)
        assert.strictEqual(row.dueAt?.toISOString(), "2024-04-01T10:00:00.123Z")
      }))

    it.effect("driver failures surface as StorageError naming the operation, never as SqlError", () =>
      Effect.gen(function*() {
        const directory = yield* DirectoryStore
        // A program of a project that does not exist: the foreign key refuses it.
        const orphan = new Program({
          id: "prg_orphan" as ProgramId,
          projectId: "prj_missing" as ProjectId,
          name: "Orphan",
          eventKey: "lesson",
          status: "test",
          mode: "continuous",
          webhookSecretHash: "hash",
          milestones: [],
          settings: defaultSettings,
          createdAt: new Date()
        })
        const error = yield* Effect.flip(directory.createProgram(orphan))
        assert.strictEqual(error._tag, "StorageError")
        assert.include(error.message, "Catalog.insert(program)")
        assert.isTrue(Option.isNone(yield* directory.program(orphan.id)))
      }))

    it.effect("a failed unit of work leaves nothing behind; a nested one commits with the outer one", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tx = yield* Transactor
        const day = unsafeLocalDate("2024-05-01")
        const failed = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock([{ key: key("rollback"), timezone: "UTC" }])
          yield* streaks.addDays([{ key: key("rollback"), day }])
          return yield* Effect.fail("boom" as const)
        })))
        assert.strictEqual(failed, "boom")
        assert.deepStrictEqual(yield* streaks.rows({ keys: [key("rollback")] }), [])
        assert.deepStrictEqual(yield* streaks.days(key("rollback")), [])
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock([{ key: key("nested"), timezone: "UTC" }])
          yield* tx.withTransaction(streaks.addDays([{ key: key("nested"), day }]))
        }))
        assert.deepStrictEqual(yield* streaks.days(key("nested")), [day])
      }))

    it.effect("a replayed idempotent answer keeps its JSON exactly, key order included", () =>
      Effect.gen(function*() {
        const idempotency = yield* IdempotencyStore
        const now = new Date("2025-01-01T00:00:00Z")
        const projectId = "prj_idem" as ProjectId
        assert.strictEqual((yield* idempotency.claim(projectId, "k1", now))._tag, "Claimed")
        const body = { ok: true, counted: false, reason: "PROGRAM_NOT_LIVE", nested: { z: 1, a: [null, "x"] } }
        yield* idempotency.complete(projectId, "k1", { status: 202, body }, now)
        const replay = yield* idempotency.claim(projectId, "k1", new Date(now.getTime() + 1000))
        assert.strictEqual(replay._tag, "Completed")
        if (replay._tag === "Completed") {
          assert.strictEqual(replay.response.status, 202)
          assert.strictEqual(JSON.stringify(replay.response.body), JSON.stringify(body))
        }
      }))
  }
)

layer(PgTest.layer, { timeout: "120 seconds" })("PgStorage table prefixes", (it) => {
  it.effect("two prefixes on one database are two separate stores", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [a, b] = yield* Effect.all([
        Layer.build(PgStorage.layer({ prefix: "tenant_a_" })),
        Layer.build(PgStorage.layer({ prefix: "tenant_b_" }))
      ])
      const workspace = new Workspace({
        id: "ws_prefix" as WorkspaceId,
        name: "A",
        plan: "growth",
        createdAt: new Date()
      })
      yield* Effect.flatMap(DirectoryStore, (d) => d.createWorkspace(workspace)).pipe(Effect.provide(a))
      const inA = yield* Effect.flatMap(DirectoryStore, (d) => d.workspace(workspace.id)).pipe(Effect.provide(a))
      const inB = yield* Effect.flatMap(DirectoryStore, (d) => d.workspace(workspace.id)).pipe(Effect.provide(b))
      assert.isTrue(Option.isSome(inA))
      assert.isTrue(Option.isNone(inB))
      const rows = yield* sql`SELECT count(*)::int AS n FROM "tenant_a_workspaces"`
      assert.strictEqual(rows[0]?.n, 1)
    }).pipe(Effect.scoped))
})
