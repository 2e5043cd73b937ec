/**
 * Replicas share due work without a leader: claimers on separate connection pools (as separate
 * processes would have) never take the same due streak row or the same due message, concurrent
 * actions of one member serialise on its streak row, an idempotency key held by one replica's
 * transaction is in progress to the others at once, and an id is taken once across projects.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { type LocalDate, unsafeLocalDate } from "@streaks/core/Calendar"
import { OutboxMessage, StreakKey, StreakRow } from "@streaks/core/Domain"
import type { MessageId, ProgramId, ProjectId, SubscriptionId, UserHash } from "@streaks/core/Ids"
import { Catalog, IdempotencyStore, Outbox, type Storage, StreakStore, Transactor } from "@streaks/core/Ports"
import { makeProgram, makeProject, makeWorkspace } from "@streaks/storage-conformance/Fixtures"
import { Array as Arr, Context, Data, Deferred, Effect, Fiber, Layer, Struct } from "effect"
import * as Migrations from "../src/Migrations.js"
import * as PgConnection from "../src/PgConnection.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

/** The storage of one "replica": its own pool on the test database. */
const replica = Effect.gen(function*() {
  const url = yield* PgTest.url
  const ctx = yield* Layer.build(PgClient.layer({ url, maxConnections: 4 }))
  return PgStorage.make(Context.get(ctx, SqlClient.SqlClient))
})

const on = <A, E>(storage: Context.Context<Storage>, effect: Effect.Effect<A, E, Storage>) =>
  Effect.provide(effect, storage)

const now = new Date("2025-01-15T12:00:00Z")

/** A batch's transaction given up on purpose, with the rows it had claimed. */
class RolledBack extends Data.TaggedError("RolledBack")<{ readonly rows: ReadonlyArray<StreakRow> }> {}
const projectId = "prj_concurrency" as ProjectId

const keyOf = (
  r: {
    readonly projectId: ProjectId
    readonly programId: ProgramId
    readonly userHash: UserHash
    readonly ledger: "live" | "test"
  }
) => `${r.projectId}/${r.programId}/${r.userHash}/${r.ledger}`

/** `count` streak rows of a fresh program, all due before `now`. */
const seedDueRows = (program: string, count: number) =>
  Effect.gen(function*() {
    const streaks = yield* StreakStore
    const programId = program as ProgramId
    yield* Effect.forEach(Arr.range(1, count), (i) =>
      streaks.save([
        new StreakRow({
          projectId,
          programId,
          userHash: `member-${i}` as UserHash,
          ledger: "live",
          lastActiveDay: "2025-01-13" as LocalDate,
          run: 3,
          best: 3,
          timezone: "UTC",
          dueAt: new Date(now.getTime() - i * 60_000),
          updatedAt: now
        })
      ]), { concurrency: 8, discard: true })
    return programId
  })

const seedMessages = (prefix: string, count: number) =>
  Effect.flatMap(Outbox, (outbox) =>
    outbox.enqueue(
      Arr.range(1, count).map((i) =>
        new OutboxMessage({
          id: `msg_${prefix}_${i}` as MessageId,
          subscriptionId: "sub_concurrency" as SubscriptionId,
          projectId,
          programId: "prg_outbox" as ProgramId,
          type: "streak.at_risk",
          payload: JSON.stringify({ i }),
          status: "pending",
          attempts: 0,
          nextAttemptAt: new Date(now.getTime() - i * 1000),
          createdAt: now
        })
      )
    ))

layer(PgTest.layer, { timeout: "120 seconds" })("Concurrency", (it) => {
  it.effect("setup: migrate the test database", () => Effect.asVoid(Migrations.run()))

  it.scoped("two claimers on two pools, each holding its claim open, never get the same due streak row", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      const programId = yield* on(a, seedDueRows("prg_hold", 30))
      const claimedA = yield* Deferred.make<void>()
      const claimedB = yield* Deferred.make<void>()
      // Each claims inside a transaction, then keeps it open until the other has claimed too,
      // so the second claim runs while the first one's rows are locked.
      const claimer = (
        storage: Context.Context<Storage>,
        mine: Deferred.Deferred<void>,
        theirs: Deferred.Deferred<void>
      ) =>
        on(
          storage,
          Effect.gen(function*() {
            const tx = yield* Transactor
            const streaks = yield* StreakStore
            return yield* tx.withTransaction(Effect.gen(function*() {
              const rows = yield* streaks.claimDue(now, 20)
              yield* Deferred.succeed(mine, undefined)
              yield* Deferred.await(theirs)
              return rows.filter((r) => r.programId === programId).map(keyOf)
            }))
          })
        )
      const [rowsA, rowsB] = yield* Effect.all([claimer(a, claimedA, claimedB), claimer(b, claimedB, claimedA)], {
        concurrency: 2
      })
      assert.strictEqual(rowsA.length + rowsB.length, 30)
      assert.deepStrictEqual(rowsA.filter((k) => rowsB.includes(k)), [])
    }))

  it.scoped("four claimers on two pools draining due streak rows take each row exactly once", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      const programId = yield* on(a, seedDueRows("prg_drain", 120))
      // The scheduler's loop: claim a batch in a transaction, save each row with its next dueAt
      // (here: nothing more due), commit; until nothing is due.
      const worker = (storage: Context.Context<Storage>) =>
        on(
          storage,
          Effect.gen(function*() {
            const tx = yield* Transactor
            const streaks = yield* StreakStore
            const taken: Array<string> = []
            while (true) {
              const batch = yield* tx.withTransaction(Effect.gen(function*() {
                const rows = yield* streaks.claimDue(now, 7)
                yield* streaks.save(rows.map((r) => new StreakRow(Struct.omit(r, "dueAt"))))
                return rows
              }))
              if (batch.length === 0) return taken
              taken.push(...batch.filter((r) => r.programId === programId).map(keyOf))
            }
          })
        )
      const taken = (yield* Effect.all([worker(a), worker(b), worker(a), worker(b)], { concurrency: "unbounded" }))
        .flat()
      assert.strictEqual(taken.length, 120)
      assert.strictEqual(new Set(taken).size, 120)
    }))

  it.scoped("a sweep's claims resume where the last one stopped, and still take the rows passed while locked or rolled back", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      // An instant of its own, before every other test's rows are due.
      const at = new Date("2020-01-15T12:00:00Z")
      const programId = "prg_resume" as ProgramId
      yield* on(
        a,
        Effect.flatMap(StreakStore, (streaks) =>
          streaks.save(
            Arr.range(1, 6).map((i) =>
              new StreakRow({
                projectId,
                programId,
                userHash: `member-${i}` as UserHash,
                ledger: "live",
                lastActiveDay: "2020-01-13" as LocalDate,
                run: 3,
                best: 3,
                timezone: "UTC",
                dueAt: new Date(at.getTime() - i * 60_000),
                updatedAt: at
              })
            )
          ))
      )
      const claim = (limit: number) => Effect.flatMap(StreakStore, (streaks) => streaks.claimDue(at, limit))
      // The other replica holds the oldest row while this one claims past it.
      const held = yield* Deferred.make<ReadonlyArray<string>>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(on(
        b,
        Effect.flatMap(Transactor, (tx) =>
          tx.withTransaction(Effect.gen(function*() {
            yield* Deferred.succeed(held, (yield* claim(1)).map(keyOf))
            yield* Deferred.await(release)
          })))
      ))
      assert.deepStrictEqual(yield* Deferred.await(held), [`${projectId}/${programId}/member-6/live`])
      // A batch that claims the next two and rolls back.
      const rolledBack = yield* on(
        a,
        Effect.flatMap(
          Transactor,
          (tx) => tx.withTransaction(Effect.flatMap(claim(2), (rows) => Effect.fail(new RolledBack({ rows }))))
        )
      ).pipe(Effect.catchTag("RolledBack", (e) => Effect.succeed(e.rows)))
      assert.deepStrictEqual(rolledBack.map((r) => r.userHash), ["member-5", "member-4"])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      // The rest of the sweep: every row still due, each once, those behind the last claim included.
      const rest = yield* on(a, Effect.flatMap(Transactor, (tx) => tx.withTransaction(claim(10))))
      assert.sameMembers(rest.map((r) => r.userHash), Arr.range(1, 6).map((i) => `member-${i}`))
      assert.strictEqual(rest.length, 6)
    }))

  it.scoped("a claim from the start of the due range may outlast the pool's statement timeout in its transaction; a claim from the position may not", () =>
    Effect.gen(function*() {
      // A pool as the server's, with a request's timeout: such a claim after a sweep of millions
      // of rows visits the moved rows' index entries and would be cancelled.
      const url = yield* PgTest.url
      const ctx = yield* Layer.build(PgConnection.layerUrl(url, { maxConnections: 2, statementTimeout: "2 seconds" }))
      const pool = PgStorage.make(Context.get(ctx, SqlClient.SqlClient))
      yield* on(pool, seedDueRows("prg_timeout", 3))
      const timeoutAfter = (limit: number) =>
        Effect.flatMap(Transactor, (tx) =>
          tx.withTransaction(Effect.gen(function*() {
            const rows = yield* Effect.flatMap(StreakStore, (streaks) => streaks.claimDue(now, limit))
            const [shown] = yield* Context.get(ctx, SqlClient.SqlClient)<
              { statement_timeout: string }
            >`SHOW statement_timeout`
            return { claimed: rows.length, timeout: shown!.statement_timeout }
          })))
      // The sweep's first claim starts at the range's beginning.
      const first = yield* on(pool, timeoutAfter(1))
      assert.deepStrictEqual(first, { claimed: 1, timeout: "1min" })
      // The next resumes at its position (a short range): the pool's timeout holds.
      const next = yield* on(pool, timeoutAfter(1))
      assert.deepStrictEqual(next, { claimed: 1, timeout: "2s" })
      // Draining the range past the position, the claim below it starts at the beginning again.
      const last = yield* on(pool, timeoutAfter(10))
      assert.strictEqual(last.timeout, "1min")
      // Outside the claims' transactions, the pool's timeout is as configured.
      const [after] = yield* Context.get(ctx, SqlClient.SqlClient)<
        { statement_timeout: string }
      >`SHOW statement_timeout`
      assert.strictEqual(after!.statement_timeout, "2s")
    }))

  it.scoped("four claimers on two pools draining the outbox take each due message exactly once", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      yield* on(a, seedMessages("drain", 150))
      const lease = new Date(now.getTime() + 60_000)
      // No surrounding transaction: the claim itself (one UPDATE … SKIP LOCKED) is the lease.
      const worker = (storage: Context.Context<Storage>) =>
        on(
          storage,
          Effect.gen(function*() {
            const outbox = yield* Outbox
            const taken: Array<string> = []
            while (true) {
              const { messages: batch } = yield* outbox.claimDue(now, 9, lease)
              if (batch.length === 0) return taken
              for (const m of batch) assert.strictEqual(m.nextAttemptAt.getTime(), lease.getTime())
              taken.push(...batch.map((m) => m.id))
            }
          })
        )
      const taken = (yield* Effect.all([worker(a), worker(b), worker(a), worker(b)], { concurrency: "unbounded" }))
        .flat()
      assert.strictEqual(taken.length, 150)
      assert.strictEqual(new Set(taken).size, 150)
      // Once the lease has run out, unfinished messages are due again.
      const again = yield* on(
        a,
        Effect.flatMap(Outbox, (o) => o.claimDue(lease, 1000, new Date(lease.getTime() + 60_000)))
      )
      assert.strictEqual(again.messages.filter((m) => m.id.startsWith("msg_drain_")).length, 150)
    }))

  it.scoped("concurrent actions of one new member on two pools serialise on its streak row", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      const key = new StreakKey({
        projectId,
        programId: "prg_lock" as ProgramId,
        userHash: "member-lock" as UserHash,
        ledger: "live"
      })
      const days = ["2025-01-10", "2025-01-11", "2025-01-12"].map(unsafeLocalDate)
      // Read-modify-write of the row: without the row lock, concurrent increments would be lost.
      const action = (storage: Context.Context<Storage>, day: LocalDate) =>
        on(
          storage,
          Effect.gen(function*() {
            const tx = yield* Transactor
            const streaks = yield* StreakStore
            yield* tx.withTransaction(Effect.gen(function*() {
              const [row] = yield* streaks.lock([{ key, timezone: "UTC" }])
              const [added] = yield* streaks.addDays([{ key, day }])
              if (added) {
                yield* streaks.save([
                  new StreakRow({ ...row!, run: row!.run + 1, best: row!.best + 1, updatedAt: now })
                ])
              }
            }))
          })
        )
      yield* Effect.all(
        Arr.range(0, 29).map((i) => action(i % 2 === 0 ? a : b, days[i % 3]!)),
        { concurrency: "unbounded", discard: true }
      )
      const rows = yield* on(a, Effect.flatMap(StreakStore, (s) => s.rows({ keys: [key] })))
      assert.deepStrictEqual(rows.map((r) => r.run), [3])
      assert.deepStrictEqual(yield* on(a, Effect.flatMap(StreakStore, (s) => s.days(key))), days)
    }))

  it.scoped("an idempotency key held inside a replica's transaction is InProgress at once on another replica (the 409 of docs/api.md#idempotency)", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      const claim = { projectId, key: `held-${Date.now()}`, now }
      const holding = yield* Deferred.make<void>()
      const answered = yield* Deferred.make<void>()
      const response = { status: 202, body: { ok: true } }
      // Replica a keeps its transaction open until replica b has answered: b must not wait for it.
      const holder = yield* Effect.fork(on(
        a,
        Effect.gen(function*() {
          const keys = yield* IdempotencyStore
          return yield* Effect.flatMap(Transactor, (tx) =>
            tx.withTransaction(Effect.gen(function*() {
              const [answer] = yield* keys.claim([claim])
              yield* Deferred.succeed(holding, undefined)
              yield* Deferred.await(answered)
              yield* keys.complete([{ ...claim, response }])
              return answer
            })))
        })
      ))
      yield* Deferred.await(holding)
      const others = yield* on(
        b,
        Effect.gen(function*() {
          const keys = yield* IdempotencyStore
          const tx = yield* Transactor
          return yield* Effect.all([
            Effect.map(keys.claim([claim]), (x) => x[0]!),
            Effect.map(tx.withTransaction(keys.claim([claim])), (x) => x[0]!)
          ], { concurrency: "unbounded" })
        })
      ).pipe(
        // Real time: waiting on a's uncommitted row would last until the test's timeout otherwise.
        Effect.raceFirst(
          Effect.promise(() => new Promise<"waited">((resolve) => setTimeout(() => resolve("waited"), 5_000)))
        )
      )
      yield* Deferred.succeed(answered, undefined)
      assert.deepStrictEqual(others, [{ _tag: "InProgress" }, { _tag: "InProgress" }])
      assert.deepStrictEqual(yield* Fiber.join(holder), { _tag: "Claimed" })
      const after = yield* on(
        b,
        Effect.flatMap(IdempotencyStore, (keys) => keys.claim([claim]))
      )
      assert.deepStrictEqual(after, [{ _tag: "Completed", response }])
    }))

  it.scoped("of concurrent inserts of one program id under two projects on two pools, in and out of transactions, exactly one is stored", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* replica, yield* replica]
      const workspace = makeWorkspace()
      const projects = [makeProject(workspace.id), makeProject(workspace.id)]
      yield* on(
        a,
        Effect.flatMap(Catalog, (catalog) =>
          Effect.forEach(
            [catalog.insert("workspace", workspace), ...projects.map((p) => catalog.insert("project", p))],
            (inserted) => Effect.map(inserted, (ok) => assert.isTrue(ok)),
            { discard: true }
          ))
      )
      // The programs' key is (project_id, id): only the adapter itself keeps the id unique.
      const id = makeProgram(projects[0]!.id).id
      const inserts = Arr.range(0, 19).map((i) =>
        on(
          i % 2 === 0 ? a : b,
          Effect.gen(function*() {
            const catalog = yield* Catalog
            const insert = catalog.insert("program", makeProgram(projects[i % 4 < 2 ? 0 : 1]!.id, { id }))
            return i % 3 === 0 ? yield* Effect.flatMap(Transactor, (tx) => tx.withTransaction(insert)) : yield* insert
          })
        )
      )
      const stored = yield* Effect.all(inserts, { concurrency: "unbounded" })
      assert.strictEqual(stored.filter(Boolean).length, 1)
      const found = yield* on(b, Effect.flatMap(Catalog, (catalog) => catalog.find("program", { id })))
      assert.strictEqual(found.length, 1)
    }))
})
