/**
 * The `reports` scenario of `pnpm bench` (`BENCH_REPORTS=10000,100000,1000000`, off by default):
 * for each size, a fresh database filled in SQL with that many members of one program, 20 active
 * days each over the last 60 (and one counted action per active day), a Proof experiment started
 * 29 days ago with a 10 % holdout; then the server answers the overview, events and insights
 * reports and the Proof report over HTTP, each timed three times (median), while the server's RSS
 * is sampled.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Migrations } from "@streaks/storage-pg"
import pg from "pg"
import * as Db from "./db.js"
import { rssOf } from "./meters.js"

const root = resolve(import.meta.dirname, "../..")
const ADMIN = "bench-admin-token"
const DAYS = 60
const ACTIVE_EVERY = 3

export interface ReportsRow {
  readonly members: number
  readonly days: number
  readonly fillSeconds: number
  /** Median seconds of three answers, or the status of a failed one. */
  readonly seconds: Readonly<Record<"overview" | "events" | "insights" | "proof", number | string>>
  readonly rssBefore: number
  readonly rssPeak: number
}

/** The member counts `BENCH_REPORTS` names (`1` alone: the default 10k and 100k). */
export const sizes = (value: string | undefined): ReadonlyArray<number> => {
  if (value === undefined || value === "") return []
  if (value === "1") return [10_000, 100_000]
  return value.split(",").map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0)
}

const freePort = async (): Promise<number> => {
  const net = await import("node:net")
  return new Promise((ok) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as import("node:net").AddressInfo).port
      s.close(() => ok(port))
    })
  })
}

const waitFor = async (url: string) => {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).status < 500) return
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not come up`)
}

const post = async (base: string, path: string, headers: Record<string, string>, body?: unknown) => {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  if (r.status >= 300) throw new Error(`${path}: ${r.status} ${await r.text()}`)
  return r.json() as Promise<any>
}

/**
 * Fills one program with `members` members in SQL: days, streak rows, actions, the report rollups
 * and an experiment.
 */
const fill = async (sql: pg.Client, projectId: string, programId: string, members: number) => {
  const p = [projectId, programId, members, DAYS]
  // Member g is active on the days d of the last 60 with (g·31 + d·17) mod 3 = 0: 20 days each.
  await sql.query(
    `INSERT INTO streaks_activity_days (project_id, program_id, user_hash, ledger, day)
     SELECT $1, $2, 'm' || g, 'live', current_date - $4::int + d
     FROM generate_series(1, $3::int) g, generate_series(0, $4::int - 1) d
     WHERE (g * 31 + d * 17) % ${ACTIVE_EVERY} = 0`,
    p
  )
  await sql.query(
    `INSERT INTO streaks_streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone, updated_at)
     SELECT $1, $2, user_hash, 'live', max(day), 1, 3,
       (ARRAY['UTC', 'America/New_York', 'Asia/Tokyo'])[1 + abs(hashtext(user_hash)) % 3], now()
     FROM streaks_activity_days WHERE project_id = $1 AND program_id = $2 GROUP BY user_hash`,
    [projectId, programId]
  )
  await sql.query(
    `INSERT INTO streaks_actions (project_id, id, program_id, user_hash, event, event_type, door, ledger, ts,
       received_at, local_date, timezone, counted, source)
     SELECT $1, 'a_' || user_hash || '_' || day, $2, user_hash, 'lesson', 'streak_interaction', 'server', 'live',
       day + time '12:00', day + time '12:00', day, 'UTC', true, 'api'
     FROM streaks_activity_days WHERE project_id = $1 AND program_id = $2`,
    [projectId, programId]
  )
  await sql.query(
    `INSERT INTO streaks_experiments (project_id, id, program_id, holdout_percent, started_at)
     VALUES ($1, 'exp_bench', $2, 10, now() - interval '29 days')`,
    [projectId, programId]
  )
  // Rows written around the adapter: the rollups it keeps with its own writes (the Proof rollup of
  // the experiment too) are filled here, as the migration fills them from existing data.
  await sql.query(Migrations.fillReportRollups())
  await sql.query("ANALYZE")
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * `BENCH_REPORTS_KEEP=name`: each size's database is `name_<members>` on `DATABASE_URL`, filled
 * the first time and kept, then measured again as it is (its fill is not timed again: 0 s).
 */
const KEEP = process.env.BENCH_REPORTS_KEEP

const one = async (server: string, members: number): Promise<ReportsRow> => {
  const db = KEEP === undefined || KEEP === "" ? { ...(await Db.open()), existed: false } : await Db.kept(
    `${KEEP}_${members}`
  )
  const sql = new pg.Client({ connectionString: db.url })
  const dataDir = mkdtempSync(join(tmpdir(), "streaks-bench-reports-"))
  let child: ChildProcess | undefined
  try {
    await sql.connect()
    await sql.query("SET statement_timeout = 0")
    const port = await freePort()
    child = spawn(process.execPath, [...(server.endsWith(".ts") ? ["--import", "tsx"] : []), server, "serve"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        PORT: String(port),
        STREAKS_ADMIN_TOKEN: ADMIN,
        STREAKS_DATA_DIR: dataDir,
        STREAKS_SECRET_KEY: "bench-secret-key"
      },
      stdio: process.env.BENCH_LOGS !== undefined ? ["ignore", "inherit", "inherit"] : "ignore"
    })
    const base = `http://127.0.0.1:${port}`
    await waitFor(`${base}/health`)
    const admin = { "x-admin-token": ADMIN }
    const found = db.existed
      ? (await sql.query(
        `SELECT g.id AS program, g.project_id AS project, p.workspace_id AS workspace
         FROM streaks_programs g JOIN streaks_projects p ON p.id = g.project_id WHERE g.name = 'reports'`
      )).rows[0]
      : undefined
    let fillSeconds = 0
    let program: { id: string }
    let workspace: { id: string }
    if (found !== undefined) {
      program = { id: found.program }
      workspace = { id: found.workspace }
    } else {
      workspace = await post(base, "/admin/workspaces", admin, { name: "reports", plan: "pro" })
      const project = await post(base, "/admin/projects", admin, {
        workspaceId: workspace.id,
        name: "reports",
        allowedOrigins: []
      })
      program = await post(base, "/admin/programs", admin, {
        projectId: project.id,
        name: "reports",
        eventKey: "lesson",
        milestones: []
      })
      await post(base, `/admin/programs/${program.id}/status`, admin, { status: "live" })
      const t0 = performance.now()
      await fill(sql, project.id, program.id, members)
      fillSeconds = (performance.now() - t0) / 1000
    }
    const key = await post(base, `/admin/workspaces/${workspace.id}/api-keys`, admin, { name: "bench" })
    const days = Number((await sql.query("SELECT count(*) AS n FROM streaks_activity_days")).rows[0].n)

    const pid = child.pid!
    const rssBefore = rssOf(pid)
    let rssPeak = rssBefore
    const sampler = setInterval(() => {
      try {
        rssPeak = Math.max(rssPeak, rssOf(pid))
      } catch {
        // the server has exited; the request that saw it says why
      }
    }, 20)
    // A failed answer (a 503 after the pool's statement timeout, say) is shown as such, not timed.
    const get = async (path: string): Promise<number | string> => {
      const t = performance.now()
      const r = await fetch(`${base}/v1/api${path}`, { headers: { authorization: `Bearer ${key.key}` } })
      await r.text()
      const s = (performance.now() - t) / 1000
      return r.status === 200 ? s : `${r.status} after ${s.toFixed(1)} s`
    }
    const timed = async (path: string): Promise<number | string> => {
      const runs = [await get(path), await get(path), await get(path)]
      const failed = runs.find((r) => typeof r === "string")
      return failed ?? median(runs as Array<number>)
    }
    try {
      const seconds = {
        overview: await timed(`/reports/overview?programId=${program.id}`),
        events: await timed(`/reports/events?programId=${program.id}`),
        insights: await timed(`/reports/insights?programId=${program.id}`),
        proof: await timed(`/programs/${program.id}/experiments/current`)
      }
      return { members, days, fillSeconds, seconds, rssBefore, rssPeak }
    } finally {
      clearInterval(sampler)
    }
  } finally {
    child?.kill("SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
    await sql.end().catch(() => undefined)
    await db.close()
  }
}

/** Runs every size in turn and prints the growth table. */
export const run = async (server: string, members: ReadonlyArray<number>): Promise<ReadonlyArray<ReportsRow>> => {
  const rows: Array<ReportsRow> = []
  console.log(
    "| members | activity days | fill s | overview s | events s | insights s | Proof s | server RSS before MB | peak during MB |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|")
  for (const n of members) {
    const r = await one(server, n)
    rows.push(r)
    const s = Object.values(r.seconds).map((x) => typeof x === "number" ? x.toFixed(3) : x)
    console.log(
      `| ${n} | ${r.days} | ${r.fillSeconds.toFixed(1)} | ${s.join(" | ")} | ${r.rssBefore.toFixed(0)} | ${
        r.rssPeak.toFixed(0)
      } |`
    )
  }
  console.log("")
  return rows
}
