/**
 * The ingest pipeline on Postgres: concurrency of one member's actions through `Ingest`, and the
 * promise that the database never holds a token or secret in plaintext.
 */
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import {
  Credentials,
  type Domain,
  EventInput,
  Ingest,
  OutboxSignal,
  Provisioning,
  SecretBox,
  Services,
  StateQuery,
  Subscriptions
} from "@streaks/core"
import { Clock, Effect, Fiber, Layer, Redacted } from "effect"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

const servicesWith = (options: Services.Options) =>
  Services.layerWith(options).pipe(
    Layer.provideMerge(
      Layer.mergeAll(PgStorage.layer(), SecretBox.layer(Redacted.make("pg-test-key")), OutboxSignal.layerNoop)
    ),
    Layer.provideMerge(PgTest.layer),
    Layer.provideMerge(Layer.setClock(Clock.make()))
  )
const services = servicesWith({})

/** A provisioned tenant with every kind of secret: the plaintexts are returned once, here. */
const provision = Effect.gen(function*() {
  const provisioning = yield* Provisioning.Provisioning
  const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "pro" })
  const project = yield* provisioning.createProject({ workspaceId: workspace.id, name: "App", allowedOrigins: [] })
  const program = yield* provisioning.createProgram({
    projectId: project.project.id,
    name: "Lessons",
    eventKey: "lesson",
    milestones: [{ target: 1, msg: "Day one", rewardType: "coupon", rewardValue: "C-1" }]
  })
  yield* provisioning.setProgramStatus(program.program.id, "live")
  const apiKey = yield* provisioning.createApiKey(workspace.id, "key")
  const grant = yield* provisioning.createOAuthGrant({ workspaceIds: [workspace.id], appName: "app" })
  const principal = yield* Effect.flatMap(Credentials.Credentials, (c) => c.authenticate(`Bearer ${apiKey.key}`))
  const subscription = yield* Effect.flatMap(
    Subscriptions.Subscriptions,
    (s) =>
      s.create(principal, {
        programId: program.program.id,
        url: "https://example.com/hook",
        eventTypes: ["milestone.achieved"]
      }, {
        allowInsecureUrls: false
      })
  )
  return {
    project: project.project,
    programId: program.program.id,
    secrets: [
      project.serverToken,
      project.signingSecret,
      program.webhookSecret,
      apiKey.key,
      grant.accessToken,
      subscription.secret
    ]
  }
})

const serverAction = (project: Domain.Project, serverToken: string, userHash: string, key?: string, ts?: number) =>
  Effect.gen(function*() {
    const action = yield* EventInput.decodeEventRecord({
      siteKey: project.siteKey,
      userHash,
      event: "lesson",
      ...(key !== undefined ? { idempotencyKey: key } : {}),
      ...(ts !== undefined ? { ts: new Date(ts).toISOString() } : {})
    })
    return yield* Effect.flatMap(
      Ingest.Ingest,
      (i) => i.record({ project, action, auth: { door: "server", serverToken } })
    )
  })

/** 300 concurrent actions, two of each of 150 members: each member counted once, every action logged. */
const crowd = Effect.gen(function*() {
  const t = yield* provision
  const members = Array.from({ length: 150 }, (_, i) => `crowd-${i}`)
  const answers = yield* Effect.all([...members, ...members].map((m) => serverAction(t.project, t.secrets[0]!, m)), {
    concurrency: "unbounded"
  })
  assert.strictEqual(answers.filter((a) => a.body.counted === true && a.body.duplicate !== true).length, 150)
  assert.strictEqual(answers.filter((a) => a.body.duplicate === true).length, 150)
  const sql = yield* SqlClient.SqlClient
  const count = (query: Effect.Effect<ReadonlyArray<{ n: number }>, unknown>) => Effect.map(query, (rows) => rows[0]!.n)
  assert.strictEqual(
    yield* count(
      sql<{ n: number }>`select count(*)::int as n from streaks_streaks where program_id = ${t.programId} and run = 1`
    ),
    150
  )
  assert.strictEqual(
    yield* count(sql<{ n: number }>`select count(*)::int as n from streaks_actions where program_id = ${t.programId}`),
    300
  )
  assert.strictEqual(
    yield* count(
      sql<{ n: number }>`select count(*)::int as n from streaks_usage where member like ${`${t.project.id}:crowd-%`}`
    ),
    150
  )
  // milestone.achieved (target 1) once per member, to the one subscription
  assert.strictEqual(
    yield* count(sql<{ n: number }>`select count(*)::int as n from streaks_outbox where program_id = ${t.programId}`),
    150
  )
})

layer(services, { timeout: 120_000 })("Ingest on Postgres", (it) => {
  it.effect("a member's row remembers the month they were metered in: the next action that month marks nothing, another month's does", () =>
    Effect.gen(function*() {
      const t = yield* provision
      const sql = yield* SqlClient.SqlClient
      const DAY = 86_400_000
      const start = Date.parse("2026-04-29T12:00:00Z")
      const usage = () =>
        Effect.map(
          sql<
            { month: string }
          >`select month from streaks_usage where member = ${`${t.project.id}:metered`} order by month`,
          (rows) => rows.map((r) => r.month)
        )
      yield* serverAction(t.project, t.secrets[0]!, "metered", undefined, start - 2 * DAY)
      assert.deepStrictEqual(yield* usage(), ["2026-04"])
      const [row] = yield* sql<
        { metered_month: string }
      >`select metered_month from streaks_streaks where user_hash = 'metered'`
      assert.strictEqual(row!.metered_month, "2026-04")
      // Forget the mark: only the row's month can now tell that the member was counted in April.
      yield* sql`delete from streaks_usage where member = ${`${t.project.id}:metered`}`
      yield* serverAction(t.project, t.secrets[0]!, "metered", undefined, start - DAY)
      assert.deepStrictEqual(yield* usage(), [], "April is already on the row: no mark")
      yield* serverAction(t.project, t.secrets[0]!, "metered", undefined, start + 2 * DAY)
      assert.deepStrictEqual(yield* usage(), ["2026-05"], "May is not: marked, and the row now says May")
    }))

  it.effect("50 concurrent actions of one member on one day count once", () =>
    Effect.gen(function*() {
      const t = yield* provision
      const answers = yield* Effect.all(
        Array.from({ length: 50 }, () => serverAction(t.project, t.secrets[0]!, "busy-member")),
        {
          concurrency: "unbounded"
        }
      )
      assert.strictEqual(answers.filter((a) => a.body.counted === true && a.body.duplicate !== true).length, 1)
      assert.strictEqual(answers.filter((a) => a.body.duplicate === true).length, 49)
      const streak = yield* Effect.flatMap(StateQuery.StateQuery, (s) => s.memberStreak(t.programId, "busy-member"))
      assert.deepStrictEqual([streak.current, streak.best], [1, 1])
      const sql = yield* SqlClient.SqlClient
      const [days] = yield* sql<
        { n: number }
      >`select count(*)::int as n from streaks_activity_days where user_hash = 'busy-member'`
      assert.strictEqual(days!.n, 1)
      const [messages] = yield* sql<
        { n: number }
      >`select count(*)::int as n from streaks_outbox where program_id = ${t.programId}`
      assert.strictEqual(messages!.n, 1) // milestone.achieved once, to the one subscription
    }))

  it.effect("300 concurrent actions of 150 members share transactions and count each member once", () => crowd)

  it.effect("a batch after the lookup: rows locked ahead, an alias with a row of its own, a newcomer and a late day count as one by one", () =>
    Effect.gen(function*() {
      const t = yield* provision
      const act = (userHash: string, ts: number) => serverAction(t.project, t.secrets[0]!, userHash, undefined, ts)
      // Days in UTC (the project's zone), from the start of today, so the test cannot straddle midnight.
      const DAY = 86_400_000
      const today = Math.floor(Date.now() / DAY) * DAY
      yield* act("member", today - 2 * DAY)
      for (const m of ["first", "regular", "repeat", "late", "anon", "member"]) yield* act(m, today - DAY)
      for (const m of ["repeat", "late"]) yield* act(m, today)
      const sql = yield* SqlClient.SqlClient
      // Linked in the table, so "anon" keeps its own row: the key locked ahead for it is the wrong one.
      yield* sql`insert into streaks_aliases (project_id, anonymous_id, user_hash) values (${t.project.id}, 'anon', 'member')`
      // "first"'s row is held for a while, so the batch of "first" (alone: a lone action waits for
      // nothing) waits, and the other actions queue up into one batch meanwhile.
      const held = yield* Effect.fork(sql.withTransaction(Effect.zipRight(
        sql`select 1 from streaks_streaks where program_id = ${t.programId} and user_hash = 'first' for update`,
        Effect.sleep("500 millis")
      )))
      yield* Effect.sleep("100 millis")

      const answers = yield* Effect.all([
        act("first", today),
        act("regular", today),
        act("repeat", today),
        act("late", today - 2 * DAY),
        act("anon", today),
        act("newcomer", today)
      ], { concurrency: "unbounded" })
      yield* Fiber.join(held)
      assert.deepStrictEqual(answers.map((a) => a.body), [
        { ok: true, counted: true },
        { ok: true, counted: true },
        { ok: true, counted: true, duplicate: true },
        { ok: true, counted: true },
        { ok: true, counted: true },
        { ok: true, counted: true }
      ])
      const rows = yield* sql<{ user_hash: string; run: number; best: number; days: number }>`
        select s.user_hash, s.run, s.best,
          (select count(*)::int from streaks_activity_days d where d.program_id = s.program_id and d.user_hash = s.user_hash) as days
        from streaks_streaks s where s.program_id = ${t.programId} order by s.user_hash`
      assert.deepStrictEqual(rows.map((r) => [r.user_hash, r.run, r.best, r.days]), [
        ["anon", 1, 1, 1],
        ["first", 2, 2, 2],
        ["late", 3, 3, 3],
        ["member", 3, 3, 3],
        ["newcomer", 1, 1, 1],
        ["regular", 2, 2, 2],
        ["repeat", 2, 2, 2]
      ])
    }))

  it.effect("after a full ingest, a dump of every table contains no plaintext token or secret", () =>
    Effect.gen(function*() {
      const t = yield* provision
      yield* serverAction(t.project, t.secrets[0]!, "member-1", "idem-1")
      yield* serverAction(t.project, t.secrets[0]!, "member-1", "idem-1")
      const sql = yield* SqlClient.SqlClient
      const tables = yield* sql<{ name: string }>`
        select table_name as name from information_schema.tables where table_schema = 'public' order by 1`
      assert.isAbove(tables.length, 10)
      let dump = ""
      for (const { name } of tables) {
        const rows = yield* sql<{ row: string }>`select row_to_json(t)::text as row from ${sql(name)} t`
        dump += rows.map((r) => r.row).join("\n")
      }
      assert.include(dump, t.project.siteKey) // the dump is real: the public siteKey is in it
      for (const secret of t.secrets) {
        assert.notInclude(dump, secret)
        // Not even the random part without its prefix.
        assert.notInclude(dump, secret.slice(secret.indexOf("_", 4) + 1))
      }
    }))
})

// Two transactions at once, as the reference server runs them under load, the second opening as
// soon as anything waits so that they surely overlap: a member's two actions may then be in both,
// one waiting for the other's row lock.
layer(servicesWith({ ingest: { workers: 2, minBatchBeside: 1 } }), { timeout: 120_000 })(
  "Ingest on Postgres, two transactions at once",
  (it) => {
    it.effect("300 concurrent actions of 150 members count each member once", () => crowd)
  }
)

let armed = true
layer(
  servicesWith({
    ingest: {
      planCheck: (w) => {
        if (w.action.userHash === "boom" && armed) throw new Error("injected defect")
      }
    }
  }),
  {
    timeout: 120_000
  }
)("Ingest on Postgres: a planning defect", (it) => {
  it.effect("fails its action alone and frees its key: the others of its group commit, the retry runs at once", () =>
    Effect.gen(function*() {
      const t = yield* provision
      armed = true
      const exits = yield* Effect.all(
        ["m-1", "boom", "m-2"].map((userHash) =>
          Effect.exit(serverAction(t.project, t.secrets[0]!, userHash, `key-${userHash}`))
        ),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(exits.map((e) => e._tag), ["Success", "Failure", "Success"])
      armed = false
      assert.deepStrictEqual((yield* serverAction(t.project, t.secrets[0]!, "boom", "key-boom")).body, {
        ok: true,
        counted: true
      })
      armed = true
    }))
})
