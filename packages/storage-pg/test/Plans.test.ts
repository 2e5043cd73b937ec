/**
 * The plan of every statement on the hot paths (catalog writes, ingest load and commit, state, the
 * sweep's claim, the outbox's claim and settle), as the adapter sends them: each one that reads a
 * tenant table filters it by one project named in the statement, or is one of the cross-tenant
 * statements documented in docs/scaling.md#cross-tenant-statements, whose plan must then use its
 * own index.
 */
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import {
  DirectoryCache,
  DueChecks,
  EventInput,
  Experiments,
  Ingest,
  OutboxSignal,
  Provisioning,
  SecretBox,
  Services
} from "@streaks/core"
import { OutboxMessage } from "@streaks/core/Domain"
import type { MessageId, ProgramId, ProjectId, SubscriptionId, UserHash } from "@streaks/core/Ids"
import { Catalog, Outbox } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import { Clock, Effect, Layer, Redacted } from "effect"
import pg from "pg"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

/**
 * Every statement sent while `recording`, with its parameters: each `client.query` of node-postgres
 * submits a `Query`, whatever the adapter's clients do around it (prepared or not, pipelined).
 */
const sent: Array<{ readonly text: string; readonly values: ReadonlyArray<unknown> }> = []
let recording = false
type Submit = (this: { readonly text?: unknown; readonly values?: unknown }, ...args: Array<unknown>) => unknown
const queryPrototype = (pg as unknown as { readonly Query: { readonly prototype: { submit: Submit } } }).Query.prototype
const submit = queryPrototype.submit
const recordingSubmit: Submit = function(...args) {
  if (recording && typeof this.text === "string") {
    sent.push({ text: this.text, values: Array.isArray(this.values) ? this.values : [] })
  }
  return submit.apply(this, args)
}

/**
 * The cross-tenant statements, each recognised by its text, with why it may read across projects
 * and the index its plan must use (so its cost follows what it returns, not the table).
 */
const crossTenant: ReadonlyArray<{ readonly what: string; readonly text: RegExp; readonly index: RegExp }> = [
  {
    what: "StreakStore.claimDue on one Postgres: the due rows of every project, oldest first",
    text: /FROM "streaks_streaks" s WHERE s\.due_at <=/,
    index: /streaks_streaks_due/
  },
  {
    what: "Outbox.claimDue on one Postgres: the due messages of every project, and the next due instant",
    text: /status = 'pending' AND next_attempt_at <=[^]*FOR UPDATE SKIP LOCKED/,
    index: /streaks_outbox_due/
  },
  {
    what: "Outbox.settle: a held message is addressed by its id alone",
    text: /UPDATE "streaks_outbox" SET [^]*WHERE id = /,
    index: /streaks_outbox_(id|due)/
  },
  {
    what: "Catalog: programs, subscriptions and experiments are addressed by id alone (reference tables on Citus)",
    text: /(FROM|UPDATE) "streaks_(programs|subscriptions|experiments)"[^]*WHERE \(?"?id"? = /,
    index: /streaks_(programs|subscriptions|experiments)_(id|pkey|running)/
  }
]

/** A condition naming one project: `project_id = 'prj_…'::text` once the parameters are bound. */
const namesProject = /project_id = '[^']*'/

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly Operation?: string
  readonly Plans?: ReadonlyArray<PlanNode>
  readonly [key: string]: unknown
}

const conditionKeys = ["Index Cond", "Filter", "Recheck Cond", "TID Cond"]

/** Every scan of a table in the plan, with its conditions (a bitmap heap scan's index's included). */
const scansOf = (
  node: PlanNode
): Array<{ readonly table: string; readonly conditions: string; readonly index?: string }> => {
  const below = (node.Plans ?? []).flatMap(scansOf)
  const own = conditionKeys.map((k) => node[k]).filter((c): c is string => typeof c === "string")
  if (node["Relation Name"] === undefined || node["Node Type"] === "ModifyTable") return below
  const bitmap = node["Node Type"] === "Bitmap Heap Scan"
    ? (node.Plans ?? []).flatMap((p) =>
      conditionKeys.map((k) => p[k]).filter((c): c is string => typeof c === "string")
    )
    : []
  const index = node["Index Name"] ?? (node.Plans ?? []).find((p) => p["Index Name"] !== undefined)?.["Index Name"]
  return [
    { table: node["Relation Name"], conditions: [...own, ...bitmap].join(" AND "), ...(index ? { index } : {}) },
    ...(bitmap.length > 0 ? [] : below)
  ]
}

const services = Services.layer.pipe(
  Layer.provide(DirectoryCache.layer({ ttl: "1 hour" })),
  Layer.provideMerge(
    Layer.mergeAll(PgStorage.layer(), SecretBox.layer(Redacted.make("pg-test-key")), OutboxSignal.layerNoop)
  ),
  Layer.provideMerge(PgTest.layer),
  // Real time: the sweep claims what is due now.
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

layer(services, { timeout: "120 seconds" })("Plans", (it) => {
  it.scoped("every hot statement filters its tenant tables by project_id, or is a documented cross-tenant one", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      queryPrototype.submit = recordingSubmit
      recording = true
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          recording = false
          queryPrototype.submit = submit
        })
      )
      // Catalog writes.
      const provisioning = yield* Provisioning.Provisioning
      const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "pro" })
      const created = yield* provisioning.createProject({ workspaceId: workspace.id, name: "App", allowedOrigins: [] })
      const program = yield* provisioning.createProgram({
        projectId: created.project.id,
        name: "Lessons",
        eventKey: "lesson",
        milestones: [{ target: 2, msg: "Two" }]
      })
      yield* provisioning.setProgramStatus(program.program.id, "live")
      const catalog = yield* Catalog
      yield* catalog.remove("subscription", { id: "sub_none" as SubscriptionId })
      // Ingest: a key's first action, then a group of actions on existing keys.
      const ingest = yield* Ingest.Ingest
      const act = (userHash: string) =>
        Effect.flatMap(
          EventInput.decodeEventRecord({ siteKey: created.project.siteKey, userHash, event: "lesson" }),
          (action) =>
            ingest.record({
              project: created.project,
              action,
              auth: { door: "server", serverToken: created.serverToken }
            })
        )
      yield* act("m1")
      yield* Effect.forEach(["m1", "m2", "m3"], act, { concurrency: "unbounded" })
      // An experiment's start, which fills the Proof rollup of the members active near it.
      yield* Effect.flatMap(Experiments.Experiments, (x) => x.start(program.program.id, 10))
      // State.
      const state = yield* StateStore
      yield* state.standing(
        [{
          projectId: created.project.id,
          programId: program.program.id,
          ledger: "live",
          userHash: "m1" as UserHash
        }],
        "2020-01-01" as never,
        "2030-01-01" as never
      )
      // The sweep's claim, with rows due.
      recording = false
      yield* sql`UPDATE streaks_streaks SET due_at = now() - interval '1 minute'`
      recording = true
      yield* Effect.flatMap(DueChecks.DueChecks, (d) => d.run())
      // The outbox's claim and settle.
      const outbox = yield* Outbox
      const now = new Date()
      yield* outbox.enqueue([
        new OutboxMessage({
          id: "msg_1" as MessageId,
          subscriptionId: "sub_1" as SubscriptionId,
          projectId: created.project.id as ProjectId,
          programId: program.program.id as ProgramId,
          type: "streak.at_risk",
          payload: "{}",
          status: "pending",
          attempts: 0,
          nextAttemptAt: now,
          createdAt: now
        })
      ])
      const lease = new Date(now.getTime() + 60_000)
      const claimed = yield* outbox.claimDue(new Date(now.getTime() + 1), 10, lease)
      assert.strictEqual(claimed.messages.length, 1)
      yield* outbox.settle({ id: "msg_1" as MessageId, leaseUntil: lease }, { _tag: "Delivered", attempts: 1, at: now })
      recording = false

      const tenant = new Set(
        (yield* sql<{ readonly table: string }>`SELECT table_name AS table FROM information_schema.columns
          WHERE column_name = 'project_id' AND table_schema = current_schema()`).map((r) => r.table)
      )
      const statements = [
        ...new Map(
          sent.flatMap((s) =>
            // Multi-statement text (no parameters, the simple protocol) is explained statement by statement.
            s.values.length > 0 ? [s] : s.text.split(/;\s*\n(?=\s*(?:WITH|SELECT|INSERT|UPDATE|DELETE)\b)/i)
              .map((text) => ({ text: text.replace(/;\s*$/, ""), values: s.values }))
          ).filter((s) => /^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i.test(s.text) && !/pg_advisory/.test(s.text))
            .map((s) => [s.text, s])
        ).values()
      ]
      assert.isAbove(statements.length, 10, "the hot paths ran their statements")
      const failures: Array<string> = []
      const exceptionsSeen = new Set<string>()
      for (const { text, values } of statements) {
        // The tables hold a few rows, where a scan is rightly cheapest: forbid it to see which
        // index serves the statement (its cost then follows what it reads, not the table).
        const [row] = yield* sql.withTransaction(
          Effect.zipRight(
            sql.unsafe("SET LOCAL enable_seqscan = off"),
            sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }> }>(
              `EXPLAIN (FORMAT JSON) ${text}`,
              values as Array<never>
            )
          )
        )
        const scans = scansOf(row!["QUERY PLAN"][0]!.Plan).filter((s) => tenant.has(s.table))
        const exception = crossTenant.find((e) => e.text.test(text))
        if (exception !== undefined) {
          exceptionsSeen.add(exception.what)
          const across = scans.filter((s) => !s.conditions.includes("project_id"))
          if (across.some((s) => s.index === undefined || !exception.index.test(s.index))) {
            failures.push(`${exception.what}: not through its index\n${text}\n${JSON.stringify(across)}`)
          }
          continue
        }
        // The project as a value of the statement (a parameter), not a column of another relation
        // (`project_id = k.project_id` of an unnested array): Citus routes only the former to a shard.
        for (const scan of scans) {
          if (!namesProject.test(scan.conditions)) {
            failures.push(`${scan.table} read without its project named:\n${text}\n${JSON.stringify(scan)}`)
          }
        }
      }
      assert.deepStrictEqual(failures, [])
      // The exceptions listed are the ones the hot paths send: none is stale.
      assert.deepStrictEqual([...exceptionsSeen].sort(), crossTenant.map((e) => e.what).sort())
    }))
})
