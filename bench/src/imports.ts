/**
 * The `import` scenario of `pnpm bench` (`BENCH_IMPORT=500000`, off by default): a fresh database,
 * one live program provisioned through the server, and an NDJSON file of that many past actions (a
 * tenth as many members, one action a day over their last days), imported by `streaks import`
 * spawned as a process, once without and once with idempotency keys. Prints actions/s over the
 * job (from its start to its end, recomputation included), the process's wall time and its peak RSS.
 */
import { spawn } from "node:child_process"
import { createWriteStream, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as Db from "./db.js"
import { rssOf } from "./meters.js"
import { ADMIN, admin, freePort, start, waitFor } from "./processes.js"

const root = resolve(import.meta.dirname, "../..")
const DAY = 86_400_000

export interface ImportRow {
  readonly keys: boolean
  readonly actions: number
  readonly members: number
  readonly actionsPerSecond: number
  readonly jobSeconds: number
  /** Of `jobSeconds`, the recomputation of the members' streaks at the end. */
  readonly recomputeSeconds: number
  readonly wallSeconds: number
  readonly rssPeak: number
}

/** `BENCH_IMPORT=500000`: the number of actions, or undefined (scenario off). */
export const sizeOf = (value: string | undefined): number | undefined => {
  if (value === undefined || value === "") return undefined
  const n = Number(value === "1" ? 500_000 : value)
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`BENCH_IMPORT: ${JSON.stringify(value)} is not a number of actions`)
  }
  return n
}

/** Writes `actions` lines: member m active on its last `actions / members` days, day by day. */
const writeFile = async (path: string, actions: number, members: number, keys: boolean) => {
  const out = createWriteStream(path)
  const days = Math.ceil(actions / members)
  let written = 0
  for (let d = days; d >= 1 && written < actions; d--) {
    const ts = new Date(Math.floor((Date.now() - d * DAY) / DAY) * DAY + 12 * 3_600_000).toISOString()
    let chunk = ""
    for (let m = 0; m < members && written < actions; m++, written++) {
      chunk += keys
        ? `{"userHash":"member-${m}","ts":"${ts}","idempotencyKey":"import-${m}-${d}"}\n`
        : `{"userHash":"member-${m}","ts":"${ts}"}\n`
    }
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()))
  }
  await new Promise<void>((ok, fail) => out.end((e?: Error | null) => (e ? fail(e) : ok())))
}

/** Runs `streaks import` on `file`, sampling its RSS; its final job and the figures. */
const importFile = (entry: string, url: string, programId: string, file: string) =>
  new Promise<{ job: any; wallSeconds: number; rssPeak: number; recomputeAt: number }>((ok, fail) => {
    const started = Date.now()
    const child = spawn(
      process.execPath,
      [
        // `BENCH_NODE_FLAGS`, e.g. `--cpu-prof`, apply to the import process too.
        ...(process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter((f) => f !== ""),
        ...(entry.endsWith(".ts") ? ["--import", "tsx"] : []),
        entry,
        "import",
        "--program",
        programId,
        file
      ],
      { cwd: root, env: { ...process.env, DATABASE_URL: url }, stdio: ["ignore", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    let rssPeak = 0
    let recomputeAt = 0
    const sampler = setInterval(() => {
      try {
        rssPeak = Math.max(rssPeak, rssOf(child.pid!))
      } catch {
        // gone
      }
    }, 200)
    child.stdout.on("data", (c) => (stdout += c))
    child.stderr.on("data", (c) => {
      stderr += c
      if (process.env.BENCH_LOGS !== undefined) process.stderr.write(c)
      if (recomputeAt === 0 && stderr.includes("recomputing")) recomputeAt = Date.now()
    })
    child.once("exit", (code) => {
      clearInterval(sampler)
      if (code !== 0) return fail(new Error(`streaks import exited ${code}: ${stderr}`))
      ok({
        job: JSON.parse(stdout.trim().split("\n").at(-1)!),
        wallSeconds: (Date.now() - started) / 1000,
        rssPeak,
        recomputeAt
      })
    })
  })

/** The scenario with `entry` as the `streaks` command (the bundle `pnpm build` makes, or a `.ts` under tsx). */
export const run = async (actions: number, entry: string): Promise<ReadonlyArray<ImportRow>> => {
  const members = Math.max(1, Math.floor(actions / 10))
  const rows: Array<ImportRow> = []
  const dir = mkdtempSync(join(tmpdir(), "streaks-bench-import-"))
  for (const keys of [false, true]) {
    const db = await Db.open()
    const port = await freePort()
    const server = start(entry, {
      DATABASE_URL: db.url,
      PORT: String(port),
      STREAKS_ADMIN_TOKEN: ADMIN,
      STREAKS_DATA_DIR: dir,
      STREAKS_SECRET_KEY: "bench-secret-key"
    }, ["serve"])
    try {
      const url = `http://127.0.0.1:${port}`
      await waitFor(`${url}/health`)
      const workspace = await admin(url, "/admin/workspaces", { name: "bench", plan: "pro" })
      const project = await admin(url, "/admin/projects", { workspaceId: workspace.id, name: "b", allowedOrigins: [] })
      const program = await admin(url, "/admin/programs", {
        projectId: project.id,
        name: "p",
        eventKey: "e",
        milestones: [{ target: 3, msg: "3" }, { target: 7, msg: "7" }]
      })
      await admin(url, `/admin/programs/${program.id}/status`, { status: "live" })
      // The server's work is done: the import talks to the database alone.
      server.kill("SIGTERM")
      const file = join(dir, `history-${keys ? "keys" : "plain"}.ndjson`)
      await writeFile(file, actions, members, keys)
      const { job, recomputeAt, rssPeak, wallSeconds } = await importFile(entry, db.url, program.id, file)
      const jobSeconds = (Date.parse(job.finishedAt) - Date.parse(job.startedAt)) / 1000
      rows.push({
        keys,
        actions: job.imported,
        members,
        actionsPerSecond: Math.round(job.imported / jobSeconds),
        jobSeconds,
        recomputeSeconds: (Date.parse(job.finishedAt) - recomputeAt) / 1000,
        wallSeconds,
        rssPeak: Math.round(rssPeak)
      })
    } finally {
      server.kill("SIGTERM")
      await db.close()
    }
  }
  rmSync(dir, { recursive: true, force: true })
  return rows
}

export const print = (rows: ReadonlyArray<ImportRow>) => {
  console.log("\n## History import (streaks import, NDJSON)\n")
  console.log(
    "| idempotency keys | actions | members | actions/s | job s | of which recompute s | wall s | peak RSS MB |"
  )
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|")
  for (const r of rows) {
    console.log(
      `| ${r.keys ? "yes" : "no"} | ${r.actions} | ${r.members} | ${r.actionsPerSecond} | ${
        r.jobSeconds.toFixed(1)
      } | ${r.recomputeSeconds.toFixed(1)} | ${r.wallSeconds.toFixed(1)} | ${r.rssPeak} |`
    )
  }
}
