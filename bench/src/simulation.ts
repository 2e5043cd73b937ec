/**
 * The `simulation` scenario of `pnpm bench` (`BENCH_SIMULATION=100000,1000000`, off by default):
 * first the calculus alone in this process (activity days replayed per second on one core, against
 * the target of a million), then for each size a fresh database filled in SQL with that many
 * members of one live program, 20 active days each over the last 60, and the whole
 * `POST …/simulations` call over HTTP timed, with the server's CPU time and RSS during it, once per
 * worker count of `BENCH_SIMULATION_WORKERS=0,1,2` (the server restarted on the same fill; unset:
 * the server's default).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import pg from "pg"
import * as Calendar from "@streaks/core/Calendar"
import * as Policy from "@streaks/core/Policy"
import * as Simulation from "@streaks/core/Simulation"
import { Schema } from "effect"
import * as Db from "./db.js"
import { cpuOf, postgresCpu, postgresCpuSince, rssOf } from "./meters.js"

const root = resolve(import.meta.dirname, "../..")
const ADMIN = "bench-admin-token"
const DAYS = 60
const ACTIVE_EVERY = 3
/** The calculus target of the issue: activity days replayed per second on one core. */
export const TARGET_DAYS_PER_SECOND = 1_000_000
/** The policy tried: weekly, two active days, a freeze to start with and one earned every 4 weeks. */
const PROPOSED = { cadence: "weekly", target: 2, freezes: { initial: 1, max: 2, earnEvery: 4 } } as const

/** The member counts `BENCH_SIMULATION` names (`1` alone: 100k). */
export const sizes = (value: string | undefined): ReadonlyArray<number> => {
  if (value === undefined || value === "") return []
  if (value === "1") return [100_000]
  return value.split(",").map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0)
}

/** Histories as the fill makes them: member g active on day d of the last 60 when (g·31 + d·17) mod 3 = 0. */
const histories = (members: number, today: Calendar.LocalDate): Array<Simulation.History> => {
  const zones = ["UTC", "America/New_York", "Asia/Tokyo"]
  const out: Array<Simulation.History> = []
  for (let g = 1; g <= members; g++) {
    const days: Array<Calendar.LocalDate> = []
    for (let d = 0; d < DAYS; d++) {
      if ((g * 31 + d * 17) % ACTIVE_EVERY === 0) days.push(Calendar.addDays(today, d - DAYS))
    }
    out.push({ timezone: zones[g % 3]!, grants: [], days })
  }
  return out
}

export interface CalculusRow {
  readonly policy: string
  readonly days: number
  readonly seconds: number
  readonly daysPerSecond: number
}

/** Days replayed per CPU second by `Simulation.outcome` on this thread (best of three passes). */
export const calculus = (members = 50_000): ReadonlyArray<CalculusRow> => {
  const now = Date.now()
  const today = Calendar.activityDay(now, "UTC", 0)
  const input = histories(members, today)
  const days = input.reduce((n, h) => n + h.days.length, 0)
  const policies: ReadonlyArray<readonly [string, Policy.Policy]> = [
    ["default (daily)", Policy.defaultPolicy],
    ["weekly, 2 days, freezes", Schema.decodeSync(Policy.Policy)(PROPOSED)],
    ["daily, weekends rest, freezes", Schema.decodeSync(Policy.Policy)({ restDays: [6, 7], freezes: { max: 2 } })]
  ]
  return policies.map(([name, policy]) => {
    const settings = { policy, milestoneTargets: [3, 7, 30], now }
    // CPU time of this thread, not wall time: on a shared host the wall clock also counts the time
    // other processes held the core.
    let best = Infinity
    for (let pass = 0; pass < 3; pass++) {
      const before = process.cpuUsage()
      Simulation.outcome(input, settings)
      const used = process.cpuUsage(before)
      best = Math.min(best, (used.user + used.system) / 1e6)
    }
    return { policy: name, days, seconds: best, daysPerSecond: days / best }
  })
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

/** Fills one program with `members` members in SQL: their days and streak rows. */
const fill = async (sql: pg.Client, projectId: string, programId: string, members: number) => {
  await sql.query(
    `INSERT INTO streaks_activity_days (project_id, program_id, user_hash, ledger, day)
     SELECT $1, $2, 'm' || g, 'live', current_date - $4::int + d
     FROM generate_series(1, $3::int) g, generate_series(0, $4::int - 1) d
     WHERE (g * 31 + d * 17) % ${ACTIVE_EVERY} = 0`,
    [projectId, programId, members, DAYS]
  )
  await sql.query(
    `INSERT INTO streaks_streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone, updated_at)
     SELECT $1, $2, user_hash, 'live', max(day), 1, 1,
       (ARRAY['UTC', 'America/New_York', 'Asia/Tokyo'])[1 + abs(hashtext(user_hash)) % 3], now()
     FROM streaks_activity_days WHERE project_id = $1 AND program_id = $2 GROUP BY user_hash`,
    [projectId, programId]
  )
  await sql.query("VACUUM ANALYZE")
}

export interface CallRow {
  readonly members: number
  /** `STREAKS_SIMULATION_WORKERS` of the server measured ("default": unset). */
  readonly workers: string
  readonly days: number
  readonly fillSeconds: number
  /** Seconds of each call. */
  readonly seconds: ReadonlyArray<number>
  readonly serverCpuSeconds: number
  /** CPU seconds of every Postgres process on the host per call (others' work included). */
  readonly postgresCpuSeconds: number
  readonly rssBefore: number
  readonly rssPeak: number
}

/** The server's own default when `BENCH_SIMULATION_WORKERS` is unset, else each count it names in turn. */
const workerSettings = (value: string | undefined): ReadonlyArray<string | undefined> =>
  value === undefined || value.trim() === "" ? [undefined] : value.split(",").map((s) => s.trim())

const stop = (child: ChildProcess) =>
  new Promise<void>((ok) => {
    child.once("exit", () => ok())
    child.kill("SIGTERM")
  })

/** `BENCH_SIMULATION_RUNS` calls (2 by default) on a filled program, with the server's CPU and RSS during them. */
const measure = async (
  pid: number,
  base: string,
  programId: string,
  key: string,
  members: number,
  days: number,
  fillSeconds: number,
  workers: string | undefined
): Promise<CallRow> => {
  const rssBefore = rssOf(pid)
  let rssPeak = rssBefore
  const sampler = setInterval(() => {
    try {
      rssPeak = Math.max(rssPeak, rssOf(pid))
    } catch {
      // the server has exited; the call that saw it says why
    }
  }, 20)
  try {
    const seconds: Array<number> = []
    const cpuBefore = cpuOf(pid)
    const postgresBefore = postgresCpu()
    const runs = Math.max(1, Number(process.env.BENCH_SIMULATION_RUNS ?? 2))
    for (let i = 0; i < runs; i++) {
      const t = performance.now()
      const r = await fetch(`${base}/v1/api/programs/${programId}/simulations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ policy: PROPOSED })
      })
      const text = await r.text()
      if (r.status !== 200) throw new Error(`simulation: ${r.status} ${text}`)
      seconds.push((performance.now() - t) / 1000)
      if (i === 0 && process.env.BENCH_LOGS !== undefined) console.log(text)
      const replayed = JSON.parse(text).actual.members
      if (replayed !== members) throw new Error(`simulation: ${replayed} members replayed of ${members}`)
    }
    return {
      members,
      workers: workers ?? "default",
      days,
      fillSeconds,
      seconds,
      serverCpuSeconds: (cpuOf(pid) - cpuBefore) / runs,
      postgresCpuSeconds: postgresCpuSince(postgresBefore) / runs,
      rssBefore,
      rssPeak
    }
  } finally {
    clearInterval(sampler)
  }
}

const one = async (server: string, members: number): Promise<ReadonlyArray<CallRow>> => {
  const db = await Db.open()
  const sql = new pg.Client({ connectionString: db.url })
  const dataDir = mkdtempSync(join(tmpdir(), "streaks-bench-simulation-"))
  let child: ChildProcess | undefined
  try {
    await sql.connect()
    await sql.query("SET statement_timeout = 0")
    const serve = async (workers: string | undefined) => {
      const port = await freePort()
      child = spawn(process.execPath, [...(server.endsWith(".ts") ? ["--import", "tsx"] : []), server, "serve"], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: db.url,
          PORT: String(port),
          STREAKS_ADMIN_TOKEN: ADMIN,
          STREAKS_DATA_DIR: dataDir,
          STREAKS_SECRET_KEY: "bench-secret-key",
          ...(workers !== undefined ? { STREAKS_SIMULATION_WORKERS: workers } : {})
        },
        stdio: process.env.BENCH_LOGS !== undefined ? ["ignore", "inherit", "inherit"] : "ignore"
      })
      const base = `http://127.0.0.1:${port}`
      await waitFor(`${base}/health`)
      return base
    }
    const settings = workerSettings(process.env.BENCH_SIMULATION_WORKERS)
    let base = await serve(settings[0])
    const admin = { "x-admin-token": ADMIN }
    const workspace = await post(base, "/admin/workspaces", admin, { name: "simulation", plan: "pro" })
    const project = await post(base, "/admin/projects", admin, {
      workspaceId: workspace.id,
      name: "simulation",
      allowedOrigins: []
    })
    const program = await post(base, "/admin/programs", admin, {
      projectId: project.id,
      name: "simulation",
      eventKey: "lesson",
      milestones: [{ target: 3, msg: "Three" }, { target: 7, msg: "A week" }]
    })
    await post(base, `/admin/programs/${program.id}/status`, admin, { status: "live" })
    const key = await post(base, `/admin/workspaces/${workspace.id}/api-keys`, admin, { name: "bench" })
    const t0 = performance.now()
    await fill(sql, project.id, program.id, members)
    const fillSeconds = (performance.now() - t0) / 1000
    const days = Number((await sql.query("SELECT count(*) AS n FROM streaks_activity_days")).rows[0].n)

    const rows: Array<CallRow> = []
    for (const [i, workers] of settings.entries()) {
      if (i > 0) {
        await stop(child!)
        base = await serve(workers)
      }
      rows.push(await measure(child!.pid!, base, program.id, key.key, members, days, fillSeconds, workers))
    }
    return rows
  } finally {
    child?.kill("SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
    await sql.end().catch(() => undefined)
    await db.close()
  }
}

/** The calculus table, then every size in turn with the whole call. */
export const run = async (server: string, members: ReadonlyArray<number>): Promise<void> => {
  console.log("| calculus alone (one thread) | activity days | CPU s, best of 3 | days per CPU s | target ≥ 1M/s |")
  console.log("|---|---|---|---|---|")
  for (const r of calculus()) {
    console.log(
      `| ${r.policy} | ${r.days} | ${r.seconds.toFixed(3)} | ${(r.daysPerSecond / 1e6).toFixed(2)}M | ${
        r.daysPerSecond >= TARGET_DAYS_PER_SECOND ? "met" : "NOT met"
      } |`
    )
  }
  console.log("")
  console.log(
    "| members | activity days | fill s | workers | call s (each run) | days/s | server CPU s per call | Postgres CPU s per call | server RSS before MB | peak during MB |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|---|")
  for (const n of members) {
    for (const r of await one(server, n)) {
      const best = Math.min(...r.seconds)
      console.log(
        `| ${n} | ${r.days} | ${r.fillSeconds.toFixed(1)} | ${r.workers} | ${
          r.seconds.map((s) => s.toFixed(2)).join(", ")
        } | ${(r.days / best / 1e6).toFixed(2)}M | ${r.serverCpuSeconds.toFixed(2)} | ${
          r.postgresCpuSeconds.toFixed(2)
        } | ${r.rssBefore.toFixed(0)} | ${r.rssPeak.toFixed(0)} |`
      )
    }
  }
  console.log("")
}
