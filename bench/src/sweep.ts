/**
 * The due-sweep part of `pnpm bench`: seeds `rows` streak rows of which `due` are due, times one
 * `DueChecks.run()` over them, then one sweep with nothing due (its cost must not follow the table).
 */
import { SqlClient } from "@effect/sql"
import { DueChecks, OutboxSignal, Provisioning, SecretBox, Services } from "@streaks/core"
import { PgConnection, PgStorage } from "@streaks/storage-pg"
import { Effect, Layer, Redacted } from "effect"

export interface SweepResult {
  readonly rows: number
  readonly due: number
  readonly dueSeconds: number
  readonly atRisk: number
  readonly emptyMillis: number
}

export const run = (url: string, options: { readonly rows: number; readonly due: number }): Promise<SweepResult> => {
  const layer = Services.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      PgStorage.layer({ prefix: "sweep_" }),
      SecretBox.layer(Redacted.make("bench")),
      OutboxSignal.layerNoop
    )),
    // Seeding a million rows is one statement, longer than the pool's default statement timeout.
    Layer.provideMerge(PgConnection.layerUrl(url, { maxConnections: 10, statementTimeout: 0 }))
  )
  return Effect.gen(function*() {
    const provisioning = yield* Provisioning.Provisioning
    const workspace = yield* provisioning.createWorkspace({ name: "sweep", plan: "pro" })
    const project = yield* provisioning.createProject({ workspaceId: workspace.id, name: "sweep", allowedOrigins: [] })
    const program = yield* provisioning.createProgram({
      projectId: project.project.id,
      name: "sweep",
      eventKey: "e",
      milestones: []
    })
    yield* provisioning.setProgramStatus(program.program.id, "live")
    const sql = yield* SqlClient.SqlClient
    // Yesterday (UTC) was the last active day: every due row owes today, so each fires at-risk.
    yield* sql`
      insert into sweep_streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone, due_at, updated_at)
      select ${project.project.id}, ${program.program.id}, 'u' || g, 'live', (now() at time zone 'UTC')::date - 1, 3, 5, 'UTC',
        case when g <= ${options.due} then now() - interval '1 minute' else now() + interval '2 days' end, now()
      from generate_series(1, ${options.rows}) g`
    yield* sql`analyze sweep_streaks`
    const due = yield* DueChecks.DueChecks
    const t0 = performance.now()
    const first = yield* due.run(
      process.env.BATCH ? { batchSize: Number(process.env.BATCH), concurrency: Number(process.env.CONC ?? 4) } : {}
    )
    const dueSeconds = (performance.now() - t0) / 1000
    const t1 = performance.now()
    yield* due.run()
    const emptyMillis = performance.now() - t1
    return { rows: options.rows, due: options.due, dueSeconds, atRisk: first.atRisk, emptyMillis }
  }).pipe(Effect.provide(layer), Effect.runPromise)
}

/**
 * One `DueChecks.run()` over the rows already due in the `streaks_` tables (`BENCH_SCALE`): how
 * long the sweep takes, and how many at-risk events it fired.
 */
export const dueOn = (url: string): Promise<{ readonly seconds: number; readonly atRisk: number }> => {
  const layer = Services.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      PgStorage.layer(),
      SecretBox.layer(Redacted.make("bench")),
      OutboxSignal.layerNoop
    )),
    Layer.provideMerge(PgConnection.layerUrl(url, { maxConnections: 10 }))
  )
  return Effect.gen(function*() {
    const due = yield* DueChecks.DueChecks
    const t0 = performance.now()
    const result = yield* due.run()
    return { seconds: (performance.now() - t0) / 1000, atRisk: result.atRisk }
  }).pipe(Effect.provide(layer), Effect.runPromise)
}
