/**
 * `pnpm bench`: one run that measures, with the same load generator (wrk if it is on the PATH, else
 * autocannon; 50 connections, 10 s after a 3 s warm-up), the bare baseline and the project's server on the same Postgres:
 * ingest and state for 100k members with a streak in each of 5 programs, and a due-check sweep
 * over 1M streak rows of which 100k are due. With wrk, a round's runs take turns in slices of 1 s
 * (`BENCH_SLICE`), so that a drift of the host's speed falls on both sides of a ratio.
 * Prints requests/s, p50/p99 latency, server RSS, server and Postgres CPU per request, WAL bytes per
 * request and the ratio to the baseline; last, a verdict on each of the issue's targets (`targets.ts`).
 */
import { execFileSync, type ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import pg from "pg"
import * as Load from "./load.js"
import * as Measure from "./measure.js"
import * as Reports from "./reports.js"
import * as Sweep from "./sweep.js"
import * as Targets from "./targets.js"
import * as Db from "./db.js"
import * as Fill from "./fill.js"
import * as Imports from "./imports.js"
import * as Scale from "./scale.js"
import * as Simulation from "./simulation.js"
import { ADMIN, admin, freePort, type Served, start, waitFor } from "./processes.js"

const root = resolve(import.meta.dirname, "../..")
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3)
/**
 * `BENCH_ROUNDS=3` measures each pair (baseline, then ours) that many times in turn and prints the
 * median ratio: on a host whose speed drifts, one pair can land on either side of a change. Each
 * ingest round starts from the fill's state (`rewind`), so the rounds measure the same work.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1))
/** The load generator: `BENCH_LOAD=wrk|autocannon`, by default wrk when it is on the PATH. */
const GENERATOR = Load.choose(process.env.BENCH_LOAD)
/**
 * `BENCH_ONLY=ingest,state` runs a subset (default: ingest, state and sweep). With `BENCH_SCALE`,
 * `sweep` is each size's due sweep and migration timing.
 */
const ONLY = new Set((process.env.BENCH_ONLY ?? "ingest,state,sweep").split(",").map((s) => s.trim()))
/**
 * `BENCH_REPORTS=10000,100000,1000000` (or `1` for 10k and 100k) first runs the reports scenario
 * (`reports.ts`) at those member counts; alone unless `BENCH_ONLY` also names other parts.
 */
const REPORTS = Reports.sizes(process.env.BENCH_REPORTS)
/**
 * `BENCH_SIMULATION=100000,1000000` (or `1` for 100k) runs the simulation scenario
 * (`simulation.ts`): the calculus alone, then the whole call at those member counts; alone unless
 * `BENCH_ONLY` also names other parts.
 */
const SIMULATION = Simulation.sizes(process.env.BENCH_SIMULATION)
/**
 * `BENCH_IMPORT=500000` (`1`: 500k) first runs the history-import scenario (`imports.ts`) with that
 * many actions; alone unless `BENCH_ONLY` also names other parts.
 */
const IMPORT = Imports.sizeOf(process.env.BENCH_IMPORT)

/**
 * The server measured: the production bundle (`pnpm build`, built here first) unless
 * `BENCH_SERVER` names another entry, e.g. `packages/server/src/bin.ts` for the sources under tsx.
 */
const SERVER = process.env.BENCH_SERVER ?? "packages/server/dist/bin.mjs"
/**
 * `BENCH_AGAINST=file` also measures another build of the server (e.g. the bundle of the commit
 * before a change, copied under `packages/server/dist/`) in every round, on the same fill: an A/B
 * in one run. The two servers take turns going first, each from a checkpoint.
 */
const AGAINST = process.env.BENCH_AGAINST
const flagsOf = (text: string | undefined) => (text ?? "").split(" ").filter((f) => f !== "")
/** Extra node flags for the server process, e.g. `BENCH_NODE_FLAGS=--max-old-space-size=96`. */
const NODE_FLAGS = flagsOf(process.env.BENCH_NODE_FLAGS)
/**
 * `BENCH_AGAINST_FLAGS` gives the other build node flags of its own instead of `BENCH_NODE_FLAGS`:
 * with `BENCH_AGAINST=packages/server/dist/bin.mjs`, an A/B of node flags on one build.
 */
const AGAINST_FLAGS = process.env.BENCH_AGAINST_FLAGS === undefined
  ? NODE_FLAGS
  : flagsOf(process.env.BENCH_AGAINST_FLAGS)
/** `BENCH_PROFILE=dir` writes a V8 CPU profile of the streaks server into `dir` when it stops. */
const PROFILE = process.env.BENCH_PROFILE
/**
 * `BENCH_WAL=1` prints each run's WAL by record type (Postgres 15+ with `pg_walinspect`): which
 * writes an action costs, and how many full-page images.
 */
let walByType = process.env.BENCH_WAL !== undefined
/**
 * `BENCH_BUFFERS=1` prints each run's pages read into shared buffers per request, by relation: what
 * did not fit in them. Postgres reports a backend's counts up to 10 s late once it idles, so each
 * run is followed by an 11 s wait.
 */
const BUFFERS = process.env.BENCH_BUFFERS !== undefined
/** `BENCH_TAIL=1` prints each run's latency at more percentiles (wrk only): what lifts the p99. */
const TAIL = process.env.BENCH_TAIL !== undefined
/**
 * `BENCH_SLICE_LOG=1` prints each slice's figures as it ends (with its start and end, epoch ms, to
 * set beside a server's own log): which stretch of a round made its p99.
 */
const SLICE_LOG = process.env.BENCH_SLICE_LOG !== undefined
/**
 * `BENCH_SLICE=1`: the runs of a round (the baseline, ours, the other build) take turns in slices
 * of this many seconds, `BENCH_SECONDS` in all each, instead of one whole run after another. This
 * host's speed drifts by tens of percent within a minute, and a whole run catches one stretch of
 * it: two identical servers measured back to back came out at 0.50 and 0.74 times the baseline.
 * Slices need wrk (its latency distribution adds up across them); `BENCH_SLICE=0`, autocannon and
 * `BENCH_BUFFERS` (whose counts are per database) measure whole runs.
 */
const SLICE = BUFFERS || GENERATOR !== Load.wrk ? 0 : Math.max(0, Number(process.env.BENCH_SLICE ?? 1))

/**
 * `BENCH_SCALE=1m` (or `10m`, `1m,10m`): the scale scenario instead of the usual fill. The database
 * grows to each size in turn (`Scale.fill`), and at each the ingest and state rounds run on it, then
 * its size on disk, a due sweep of a tenth of the streak rows and the time of a migration on it are
 * read; last, a growth table. Off by default: the 1M fill alone takes minutes.
 */
const SCALE = process.env.BENCH_SCALE === undefined || process.env.BENCH_SCALE === ""
  ? undefined
  : Scale.sizesOf(process.env.BENCH_SCALE)
// Refused before the fill rather than after it (minutes at 1M).
if (SCALE !== undefined) Scale.checkTimedMigration()

/**
 * `BENCH_DATABASE=name` (with `DATABASE_URL`): the scale scenario fills that database and keeps it,
 * and a later run with the same name measures it without filling again (or grows it to a larger
 * size). Drop it when done.
 */
const KEPT = process.env.BENCH_DATABASE !== undefined && process.env.BENCH_DATABASE !== ""

/** `BENCH_STEADY=1`: each ingest round pays every streaks page's full-page image first (`Fill.payImages`). */
const STEADY = process.env.BENCH_STEADY !== undefined
/** `BENCH_TZ`, `BENCH_CROSSING`, `BENCH_IDEMPOTENCY`: what the actions do besides extending a run (`Fill.Mix`). */
const MIX = Fill.mixOf(process.env)

const main = async () => {
  const db = await Db.open()
  // The bench's own statements (the fill, WAL positions) on one connection.
  const sql = new pg.Client({ connectionString: db.url })
  const children: Array<ChildProcess> = []
  const dataDir = mkdtempSync(join(tmpdir(), "streaks-bench-"))
  try {
    await sql.connect()
    if (walByType) {
      await sql.query("create extension if not exists pg_walinspect").catch((e: Error) => {
        console.log(`# BENCH_WAL: no pg_walinspect here (${e.message}); WAL by type not shown`)
        walByType = false
      })
    }
    const measure = Measure.make(sql, {
      generator: GENERATOR,
      connections: CONNECTIONS,
      seconds: DURATION,
      warmup: WARMUP,
      tail: TAIL,
      slice: SLICE,
      sliceLog: SLICE_LOG,
      walByType,
      buffers: BUFFERS
    })
    console.log(
      `# Streaks benchmark — ${GENERATOR.name}, ${CONNECTIONS} connections, ${DURATION} s after ${WARMUP} s warm-up`
    )
    console.log(
      SLICE > 0
        ? `# each round's runs interleaved in slices of ${SLICE} s (BENCH_SLICE=0: whole runs, one after another)`
        : "# each round's runs whole, one after another"
    )
    console.log(`# database: ${db.description}`)
    const mix = Fill.describe(MIX)
    if (mix !== undefined) console.log(`# traffic: ${mix}`)
    if (process.env.BENCH_SERVER === undefined) {
      execFileSync(process.execPath, ["--import", "tsx", "packages/server/scripts/bundle.ts"], {
        cwd: root,
        stdio: "ignore"
      })
    }
    console.log(`# server: node ${SERVER}${NODE_FLAGS.length > 0 ? ` (${NODE_FLAGS.join(" ")})` : ""}`)
    // The import scenario runs `streaks import` of the same build, on databases of its own.
    if (IMPORT !== undefined) Imports.print(await Imports.run(IMPORT, SERVER))
    if (REPORTS.length > 0) await Reports.run(SERVER, REPORTS)
    if (SIMULATION.length > 0) await Simulation.run(SERVER, SIMULATION)
    const scenarios = IMPORT !== undefined || REPORTS.length > 0 || SIMULATION.length > 0
    if (scenarios && process.env.BENCH_ONLY === undefined) return

    const basePort = await freePort()
    const baseline = start("bench/src/baseline.ts", { DATABASE_URL: db.url, PORT: String(basePort) })
    children.push(baseline)
    const baseUrl = `http://127.0.0.1:${basePort}`
    await waitFor(`${baseUrl}/nothing`)

    /** A measured server's environment: the bench's database, admin token and data folder. */
    const serverEnv = (port: number) => ({
      DATABASE_URL: db.url,
      PORT: String(port),
      STREAKS_ADMIN_TOKEN: ADMIN,
      STREAKS_DATA_DIR: dataDir,
      STREAKS_SECRET_KEY: "bench-secret-key"
    })
    const port = await freePort()
    const server = start(SERVER, serverEnv(port), ["serve"], [
      ...NODE_FLAGS,
      ...(PROFILE !== undefined ? ["--cpu-prof", `--cpu-prof-dir=${resolve(PROFILE)}`] : [])
    ])
    children.push(server)
    const url = `http://127.0.0.1:${port}`
    await waitFor(`${url}/health`)
    // The other build serves the same database (and so the same project) on a port of its own.
    const other = AGAINST === undefined ? undefined : await (async () => {
      const otherPort = await freePort()
      const child = start(AGAINST, serverEnv(otherPort), ["serve"], AGAINST_FLAGS)
      children.push(child)
      const otherUrl = `http://127.0.0.1:${otherPort}`
      await waitFor(`${otherUrl}/health`)
      console.log(`# against: node ${AGAINST}${AGAINST_FLAGS.length > 0 ? ` (${AGAINST_FLAGS.join(" ")})` : ""}`)
      return { url: otherUrl, pid: child.pid }
    })()

    // A kept database's earlier scale run (`BENCH_DATABASE`): its workspace, projects and fill.
    const before = SCALE !== undefined && KEPT ? await Scale.kept(sql) : undefined
    const workspace = before !== undefined
      ? { id: before.workspaceId }
      : await admin(url, "/admin/workspaces", { name: "bench", plan: "pro" })
    /** A project and its live programs, each with milestones at 3 days (reached) and 7 (a reward). */
    const provision = async (name: string, count: number) => {
      const project = await admin(url, "/admin/projects", { workspaceId: workspace.id, name, allowedOrigins: [] })
      const programs: Array<Fill.Program> = []
      for (let i = 0; i < count; i++) {
        const program = await admin(url, "/admin/programs", {
          projectId: project.id,
          name: `p${i}`,
          eventKey: `e${i}`,
          milestones: [{ target: 3, msg: "3" }, { target: 7, msg: "7", rewardType: "coupon", rewardValue: "C" }]
        })
        await admin(url, `/admin/programs/${program.id}/status`, { status: "live" })
        const milestone = (target: number): string =>
          program.milestones.find((m: { target: number }) => m.target === target).id
        programs.push({ id: program.id, reached: milestone(3), next: milestone(7) })
      }
      return { project, programs }
    }
    const { programs, project } = before !== undefined
      ? { programs: [...before.projects[0]!.programs], project: before.projects[0]! }
      : await provision("bench", SCALE === undefined ? Fill.PROGRAMS : Scale.PROGRAMS)
    // With `BENCH_SCALE`, the rounds act on the first of `Scale.PROJECTS` projects.
    const scaled: Array<Scale.Kept["projects"][number]> = before !== undefined
      ? [...before.projects]
      : [{ id: project.id, siteKey: project.siteKey, serverToken: project.serverToken, programs }]
    for (let i = 1; SCALE !== undefined && before === undefined && i < Scale.PROJECTS; i++) {
      const other = await provision(`bench-${i}`, Scale.PROGRAMS)
      scaled.push({
        id: other.project.id,
        siteKey: other.project.siteKey,
        serverToken: other.project.serverToken,
        programs: other.programs
      })
    }
    if (SCALE === undefined) await Fill.populate(sql, workspace.id, project.id, programs, MIX)
    const siteKey: string = project.siteKey
    const token: string = project.serverToken
    // Each request acts for a random member in a random program (drawn by the load generator).
    const draw = { members: Fill.MEMBERS, events: programs.length }
    const event = Fill.eventTemplate(siteKey, MIX)
    /** With `BENCH_SCALE`, the size each run's name starts with. */
    let sizeLabel = ""

    /** Each round: the baseline, ours and, with `BENCH_AGAINST`, the other build. */
    interface Round {
      readonly base: Measure.Result
      readonly ours: Measure.Result
      readonly other?: Measure.Result
    }
    const results: Array<Round> = []
    const runsOf = ({ base, ours, other: against }: Round) =>
      against === undefined ? [base, ours] : [base, ours, against]
    const ratios: Array<[string, Array<number>]> = []
    /** A round's targets: the baseline, ours and, with `BENCH_AGAINST`, the other build. */
    const rounds = async (
      what: string,
      oursOf: (name: (n: string) => string, at: Served) => Measure.Target,
      baseOf: (name: (n: string) => string) => Measure.Target,
      fresh: () => Promise<void>
    ): Promise<ReadonlyArray<Round>> => {
      const part: Array<Round> = []
      const mine: Array<number> = []
      const theirs: Array<number> = []
      for (let round = 1; round <= ROUNDS; round++) {
        const name = (n: string) => `${sizeLabel}${ROUNDS > 1 ? `${n}, round ${round}` : n}`
        const base = baseOf(name)
        const ours = oursOf(name, { url, pid: server.pid })
        const against = other === undefined ? undefined : oursOf((n) => `${name(n)} [against]`, other)
        // Every run starts from the state the fill left (`fresh`) and from a checkpoint, before its
        // warm-up: it pays the same full-page images rather than finding the pages that the run
        // before it paid for.
        const measured = SLICE > 0
          ? await measure.interleaved(against === undefined ? [base, ours] : [base, ours, against], round, fresh)
          : await (async () => {
            const whole = [await measure.whole(base, fresh)]
            if (against === undefined) return [...whole, await measure.whole(ours, fresh)]
            // The two builds alternate which goes first.
            for (const target of round % 2 === 1 ? [ours, against] : [against, ours]) {
              whole.push(await measure.whole(target, fresh))
            }
            return round % 2 === 1 ? whole : [whole[0]!, whole[2]!, whole[1]!]
          })()
        const [b, o, a] = measured
        const measuredRound = { base: b!, ours: o!, ...(a !== undefined ? { other: a } : {}) }
        results.push(measuredRound)
        part.push(measuredRound)
        mine.push(o!.rps / b!.rps)
        if (a !== undefined) theirs.push(a.rps / b!.rps)
      }
      ratios.push([`${sizeLabel}${what}`, mine])
      if (other !== undefined) ratios.push([`${sizeLabel}${what} [against]`, theirs])
      return part
    }
    /** The ingest and state rounds; `rewind` puts back what an ingest round changed. */
    const ingestAndState = async (rewind: () => Promise<void>) => {
      let figures: Targets.Figures = {}
      let stateP99s: Array<number> = []
      if (ONLY.has("ingest")) {
        const ingest = await rounds(
          "ingest",
          (name, at) => ({
            name: name("streaks POST /v1/server/e (full ingest)"),
            ...at,
            traffic: {
              ...draw,
              method: "POST",
              path: "/v1/server/e",
              body: event,
              headers: { "content-type": "application/json", "x-streak-server-token": token }
            }
          }),
          (name) => ({
            name: name("baseline POST /e (bare node:http + pg upsert)"),
            url: baseUrl,
            pid: baseline.pid,
            traffic: {
              ...draw,
              method: "POST",
              path: "/e",
              body: event,
              headers: { "content-type": "application/json" }
            }
          }),
          async () => {
            await rewind()
            await Fill.checkpoint(sql)
            if (STEADY) await Fill.payImages(sql)
          }
        )
        figures = {
          ingest: {
            ratios: ingest.map((r) => r.ours.rps / r.base.rps),
            p99s: ingest.map((r) => r.ours.p99),
            baselineP99s: ingest.map((r) => r.base.p99),
            rssMb: ingest.flatMap((r) => r.ours.rssMb === undefined ? [] : [r.ours.rssMb])
          }
        }
      }

      const query = `siteKey=${siteKey}&userHash={member}&event={event}`
      if (ONLY.has("state")) {
        const state = await rounds(
          "state",
          (name, at) => ({
            name: name("streaks GET /v1/state"),
            ...at,
            traffic: { ...draw, method: "GET", path: `/v1/state?${query}`, headers: { "x-streak-server-token": token } }
          }),
          (name) => ({
            name: name("baseline GET /state (bare SELECT)"),
            url: baseUrl,
            pid: baseline.pid,
            traffic: { ...draw, method: "GET", path: `/state?${query}`, headers: {} }
          }),
          () => Fill.checkpoint(sql)
        )
        figures = { ...figures, state: { ratios: state.map((r) => r.ours.rps / r.base.rps) } }
        stateP99s = state.map((r) => r.ours.p99)
      }
      return { figures, stateP99s }
    }

    /** What the targets are judged by: the service's figures (not the other build's). */
    let figures: Targets.Figures = {}
    /** With `BENCH_SCALE`: one line of the growth table per size. */
    const growth: Array<string> = []
    if (SCALE === undefined) {
      figures = (await ingestAndState(() => Fill.rewind(sql, programs, MIX))).figures
    } else {
      let filled = before?.filled ?? 0
      for (const size of SCALE) {
        const perProject = size / Scale.PROJECTS
        // A kept database already grown to this size (or past it) is measured as it is.
        if (perProject < filled) throw new Error(`BENCH_SCALE: the kept database holds ${filled} members per project`)
        console.log(`# scale: growing to ${size} members (${Scale.PROJECTS} projects of ${perProject})`)
        const fillSeconds = perProject === filled
          ? undefined
          : await Scale.fill(sql, workspace.id, scaled, filled, perProject, Scale.LEAN, async (members) => {
            // A kept database records each committed chunk, so a stopped fill resumes after it.
            if (KEPT) await Scale.keep(sql, { workspaceId: workspace.id, projects: scaled, filled: members })
          })
        filled = perProject
        const since = new Date()
        sizeLabel = `${size / 1_000_000}M: `
        draw.members = perProject
        const measured = await ingestAndState(() => Scale.rewind(sql, scaled, since))
        // What the rounds left, put back, so that every size is measured on the fill's state.
        await Scale.rewind(sql, scaled, since)
        const tables = await Scale.sizes(sql)
        console.log("")
        console.log(`| ${sizeLabel}table | rows | heap MB | indexes MB | bytes per member |`)
        console.log("|---|---|---|---|---|")
        for (const t of tables) {
          console.log(
            `| ${t.table} | ${t.rows} | ${Scale.megabytes(t.heap)} | ${Scale.megabytes(t.indexes)} | ${
              Math.round((t.heap + t.indexes) / Scale.membersOf(t.table, size, Scale.LEAN))
            } |`
          )
        }
        console.log("")
        const heap = tables.reduce((n, t) => n + t.heap, 0)
        const indexes = tables.reduce((n, t) => n + t.indexes, 0)
        // Per member as a full fill would have it: a lean fill's log counts per first-project member.
        const perMember = (part: (t: Scale.TableSize) => number) =>
          Math.round(tables.reduce((n, t) => n + part(t) / Scale.membersOf(t.table, size, Scale.LEAN), 0))
        // `BENCH_ONLY` without `sweep`: the rounds and sizes alone (the sweep and the migration
        // write a few GB at 10M, which a disk near full may not have).
        const sweepAndMigrate = async () => {
          const dueRows = await Scale.makeDue(sql)
          const sweep = await Sweep.dueOn(db.url)
          await Scale.rewind(sql, scaled, since)
          const migration = await Scale.timeMigrations(db.url)
          console.log(`# ${sizeLabel}migrations applied on the filled database: ${migration.applied.join(", ")}`)
          return { dueRows, sweep, migration }
        }
        const swept = ONLY.has("sweep") ? await sweepAndMigrate() : undefined
        const ratio = (xs: ReadonlyArray<number> | undefined) =>
          xs === undefined || xs.length === 0 ? "-" : `${Targets.median(xs).toFixed(2)}×`
        growth.push(
          `| ${size} | ${fillSeconds?.toFixed(0) ?? "kept"} | ${ratio(measured.figures.ingest?.ratios)} | ${
            ratio(measured.figures.state?.ratios)
          } | ${measured.stateP99s.length === 0 ? "-" : Targets.median(measured.stateP99s).toFixed(1)} | ${
            swept?.dueRows ?? "-"
          } | ${swept?.sweep.seconds.toFixed(1) ?? "-"} | ${
            swept === undefined ? "-" : (swept.sweep.seconds * 1e6 / Math.max(1, swept.dueRows)).toFixed(0)
          } | ${perMember((t) => t.heap)} | ${perMember((t) => t.indexes)} | ${Scale.megabytes(heap + indexes)} | ${
            swept?.migration.upgradeSeconds.toFixed(2) ?? "-"
          } | ${swept?.migration.nothingPendingMillis.toFixed(0) ?? "-"} |`
        )
      }
    }

    console.log("")
    console.log(
      "| run | req/s | p50 ms | p99 ms | errors | non-2xx | server RSS MB | server CPU ms/req | Postgres CPU ms/req | load generator CPU ms/req | machine idle | WAL bytes/req | ratio to baseline |"
    )
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (const round of results) {
      for (const r of runsOf(round)) {
        const ratio = (r.rps / round.base.rps).toFixed(2) + "×"
        console.log(
          `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${r.rssMb ?? "-"} | ${
            r.cpuMs?.toFixed(3) ?? "-"
          } | ${r.dbCpuMs.toFixed(3)} | ${r.loadCpuMs.toFixed(3)} | ${Math.round(r.idle * 100)} % | ${
            Math.round(r.walBytes)
          } | ${ratio} |`
        )
      }
    }
    if (ROUNDS > 1) {
      console.log("")
      for (const [what, all] of ratios) {
        console.log(
          `Median ratio of ${what} over ${ROUNDS} rounds: ${Targets.median(all).toFixed(2)}× (${
            all.map((r) => r.toFixed(2)).join(", ")
          })`
        )
      }
    }

    const measured = results.flatMap(runsOf)
    if (measured.some((r) => r.tail !== undefined)) {
      console.log("")
      console.log(`| run | ${Measure.tailPercentiles.map((p) => `p${p} ms`).join(" | ")} |`)
      console.log(`|---|${Measure.tailPercentiles.map(() => "---").join("|")}|`)
      for (const r of measured) if (r.tail !== undefined) console.log(`| ${r.name} | ${r.tail.join(" | ")} |`)
    }
    for (const r of measured) {
      if (r.walRecords === undefined) continue
      console.log("")
      if (r.walRecords.length === 0) {
        console.log(`WAL of ${r.name}: none`)
        continue
      }
      console.log(`WAL of ${r.name}, per request:`)
      console.log("")
      console.log("| record type | records | bytes | full-page image bytes |")
      console.log("|---|---|---|---|")
      for (const w of r.walRecords) {
        console.log(`| ${w.type} | ${w.perReq.toFixed(2)} | ${Math.round(w.bytes)} | ${Math.round(w.fpiBytes)} |`)
      }
    }

    for (const r of measured) {
      if (r.bufferReads === undefined) continue
      console.log("")
      console.log(`Pages read into shared buffers by ${r.name}: ${r.bufferReads.perReq.toFixed(2)} per request`)
      for (const [name, n] of r.bufferReads.byRelation) console.log(`- ${name}: ${n.toFixed(2)}`)
    }

    for (const child of children) child.kill("SIGTERM")
    if (PROFILE !== undefined) await new Promise<void>((ok) => server.once("exit", () => ok()))
    children.length = 0

    console.log("")
    if (SCALE !== undefined) {
      console.log(
        `Growth: ${Scale.PROJECTS} projects of ${Scale.PROGRAMS} programs, every member with a streak in each program of its project and ${Scale.DAYS} active days in each (ratios: median over the rounds)`
      )
      if (Scale.LEAN) {
        console.log(
          "Lean fill (BENCH_SCALE_LEAN): the action log and the baseline's table hold the first project's members only; bytes per member count the log per member of that project"
        )
      }
      console.log("")
      console.log(
        `| members | fill s | ingest ratio | state ratio | state p99 ms | due rows (10 %) | sweep s | sweep µs per due row | heap bytes per member | index bytes per member | database MB | migration ${Scale.timedMigrationKey} s | migrate, nothing pending, ms |`
      )
      console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
      for (const line of growth) console.log(line)
      return
    }
    if (ONLY.has("sweep")) {
      const sweep = await Sweep.run(db.url, { rows: 1_000_000, due: 100_000 })
      console.log(`| due sweep | rows | due | seconds | at-risk fired |`)
      console.log(`|---|---|---|---|---|`)
      console.log(
        `| 100k due among 1M | ${sweep.rows} | ${sweep.due} | ${sweep.dueSeconds.toFixed(2)} | ${sweep.atRisk} |`
      )
      console.log(`| nothing due among 1M | ${sweep.rows} | 0 | ${(sweep.emptyMillis / 1000).toFixed(3)} | 0 |`)
      console.log("")
      figures = { ...figures, sweep: { dueSeconds: sweep.dueSeconds, emptyMillis: sweep.emptyMillis } }
    }
    // The issue's targets are set at 50 connections and 10 s per run.
    if (CONNECTIONS !== 50 || DURATION !== 10) {
      console.log(
        `# the targets are set at 50 connections and 10 s: this run's ${CONNECTIONS} and ${DURATION} s judge them only roughly`
      )
    }
    for (const line of Targets.table(Targets.judge(figures))) console.log(line)
  } finally {
    for (const child of children) child.kill("SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
    await sql.end().catch(() => undefined)
    await db.close()
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
