/**
 * How the bench measures a server: a whole run after its warm-up, or a round's runs interleaved in
 * slices, with the meters (CPU, WAL, RSS, the machine's idle share) read around each piece of load.
 */
import type pg from "pg"
import * as Load from "./load.js"
import * as Meters from "./meters.js"

/** How to measure: the load, its length and what else to read (`run.ts` takes them from `BENCH_*`). */
export interface Options {
  readonly generator: Load.Generator
  readonly connections: number
  /** Measured seconds of each target per round. */
  readonly seconds: number
  /** Seconds of load before measuring. */
  readonly warmup: number
  /** Seconds per slice of an interleaved round (0: whole runs). */
  readonly slice: number
  /** Print each slice's figures as it ends. */
  readonly sliceLog: boolean
  /** Read the WAL's records by type (`pg_walinspect`). */
  readonly walByType: boolean
  /** Read the pages read into shared buffers (whole runs only: the counts are the database's). */
  readonly buffers: boolean
  /** Work out the latency's percentiles of `tailPercentiles` (wrk only: autocannon gives no distribution). */
  readonly tail: boolean
}

/** The percentiles `BENCH_TAIL` prints: where the p99 comes from, between the p50 and the worst. */
export const tailPercentiles = [50, 75, 90, 95, 98, 99, 99.5, 99.9] as const

export interface Result {
  readonly name: string
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly non2xx: number
  readonly rssMb?: number
  /** Server CPU milliseconds per request: what the process itself spends, whoever else runs. */
  readonly cpuMs?: number
  /** Postgres CPU milliseconds per request (all its processes). */
  readonly dbCpuMs: number
  /** The load generator's CPU milliseconds per request (wrk's process, or this one for autocannon). */
  readonly loadCpuMs: number
  /**
   * The share of the machine's CPU left idle during the run: near 0 when the machine is the limit,
   * well above it when the requests wait on each other (latency, not CPU, bounds the rate).
   */
  readonly idle: number
  /**
   * Bytes of WAL Postgres wrote per request: what the writes cost, independent of how fast the host
   * runs today (full-page images after a checkpoint count too).
   */
  readonly walBytes: number
  /** With `BENCH_WAL`: the run's WAL records per request by type (and full-page image bytes). */
  readonly walRecords?: ReadonlyArray<
    { readonly type: string; readonly perReq: number; readonly bytes: number; readonly fpiBytes: number }
  >
  /** With `BENCH_BUFFERS`: pages read into shared buffers per request, in all and by relation. */
  readonly bufferReads?: { readonly perReq: number; readonly byRelation: ReadonlyArray<readonly [string, number]> }
  /** With `BENCH_TAIL` and wrk: the latency at each of `tailPercentiles`, milliseconds. */
  readonly tail?: ReadonlyArray<number>
}

/** A server measured in a round: its name in the table, where it listens, what it is sent, its process. */
export interface Target {
  readonly name: string
  readonly url: string
  readonly traffic: Load.Traffic
  readonly pid?: number | undefined
}

/** A target's measured time so far: the sums of its slices (a whole run is one slice). */
interface Tally {
  requests: number
  seconds: number
  errors: number
  non2xx: number
  /** Each slice's figures as the generator gave them: a whole run's are used as they are. */
  readonly outcomes: Array<Load.Outcome>
  readonly latencies: Map<number, number>
  loadCpu: number
  serverCpu: number
  dbCpu: number
  idleTicks: number
  ticks: number
  wal: number
  rss: number
  /** With `BENCH_WAL`: records, bytes and full-page image bytes by record type. */
  readonly walRecords: Map<string, { count: number; bytes: number; fpiBytes: number }>
}

const tally = (): Tally => ({
  requests: 0,
  seconds: 0,
  errors: 0,
  non2xx: 0,
  outcomes: [],
  latencies: new Map(),
  loadCpu: 0,
  serverCpu: 0,
  dbCpu: 0,
  idleTicks: 0,
  ticks: 0,
  wal: 0,
  rss: 0,
  walRecords: new Map()
})

/**
 * Measures against `db` (the bench's own connection, for WAL positions and buffer counts): `whole`
 * for one target at a time, `interleaved` for a round's targets in slices.
 */
export const make = (db: pg.Client, options: Options) => {
  const generate = (target: Target, seconds: number) =>
    options.generator.run(target.url, target.traffic, { connections: options.connections, seconds })

  /** Runs the load on `target` for `seconds`, adding what it cost to `into`. */
  const measureSlice = async (target: Target, seconds: number, into: Tally): Promise<void> => {
    const { pid } = target
    const sampler = pid === undefined
      ? undefined
      : setInterval(() => (into.rss = Math.max(into.rss, Meters.rssOf(pid))), 250)
    const cpuBefore = pid === undefined ? 0 : Meters.cpuOf(pid)
    const dbBefore = Meters.postgresCpu()
    const ticksBefore = Meters.machineTicks()
    const walBefore = await Meters.walPosition(db)
    const started = Date.now()
    const r = await generate(target, seconds)
    if (pid !== undefined) into.serverCpu += Meters.cpuOf(pid) - cpuBefore
    into.dbCpu += Meters.postgresCpuSince(dbBefore)
    const ticksAfter = Meters.machineTicks()
    into.idleTicks += ticksAfter.idle - ticksBefore.idle
    into.ticks += ticksAfter.total - ticksBefore.total
    const walAfter = await Meters.walPosition(db)
    into.wal += walAfter - walBefore
    if (sampler !== undefined) clearInterval(sampler)
    into.requests += r.requests
    into.seconds += r.seconds
    into.errors += r.errors
    into.non2xx += r.non2xx
    into.loadCpu += r.cpuSeconds
    into.outcomes.push(r)
    if (options.sliceLog) {
      console.log(
        `# slice ${started}–${Date.now()} ${target.name}: ${Math.round(r.requests / r.seconds)} requests/s, ` +
          `p50 ${r.p50} ms, p99 ${r.p99} ms, ${
            Math.round((walAfter - walBefore) / r.requests)
          } bytes of WAL per request`
      )
    }
    for (const [micros, count] of r.latencies ?? []) {
      into.latencies.set(micros, (into.latencies.get(micros) ?? 0) + count)
    }
    if (options.walByType) {
      // Read at once: the segments are recycled after the next checkpoint. Per one request, that is
      // the slice's own counts; the target's requests divide their sums in `resultOf`.
      const records = await Meters.walRecordsOf(db, walBefore, walAfter, 1).catch((e: Error) => {
        console.log(`# BENCH_WAL: WAL by type of "${target.name}" not read (${e.message})`)
        return []
      })
      for (const w of records) {
        const sum = into.walRecords.get(w.type) ?? { count: 0, bytes: 0, fpiBytes: 0 }
        into.walRecords.set(w.type, {
          count: sum.count + w.perReq,
          bytes: sum.bytes + w.bytes,
          fpiBytes: sum.fpiBytes + w.fpiBytes
        })
      }
    }
  }

  /** A target's row of the table, from its tally (and, with `BENCH_BUFFERS`, the pages it read). */
  const resultOf = (target: Target, t: Tally, bufferReads?: Result["bufferReads"]): Result => {
    const requests = Math.max(1, t.requests)
    // A whole run's rate and percentiles as the generator gave them; slices' from their sums and
    // their latencies taken together.
    const one = t.outcomes.length === 1 ? t.outcomes[0] : undefined
    return {
      name: target.name,
      rps: one?.rps ?? Math.round(t.requests / Math.max(t.seconds, 1e-9)),
      p50: one?.p50 ?? Load.percentileOf(t.latencies, 50),
      p99: one?.p99 ?? Load.percentileOf(t.latencies, 99),
      errors: t.errors,
      non2xx: t.non2xx,
      dbCpuMs: (t.dbCpu * 1000) / requests,
      loadCpuMs: (t.loadCpu * 1000) / requests,
      idle: t.idleTicks / Math.max(1, t.ticks),
      walBytes: t.wal / requests,
      ...(options.walByType
        ? {
          walRecords: [...t.walRecords]
            .map(([type, w]) => ({
              type,
              perReq: w.count / requests,
              bytes: w.bytes / requests,
              fpiBytes: w.fpiBytes / requests
            }))
            .filter((w) => w.perReq >= 0.01)
            .sort((a, b) => b.bytes + b.fpiBytes - (a.bytes + a.fpiBytes))
        }
        : {}),
      ...(bufferReads !== undefined ? { bufferReads } : {}),
      ...(options.tail && t.latencies.size > 0
        ? { tail: tailPercentiles.map((p) => Load.percentileOf(t.latencies, p)) }
        : {}),
      ...(target.pid !== undefined ? { rssMb: Math.round(t.rss), cpuMs: (t.serverCpu * 1000) / requests } : {})
    }
  }

  /**
   * A whole run: `fresh` (which puts the database back as a run should find it), the warm-up, then
   * the measured seconds (and the pages read, with `buffers`).
   */
  const whole = async (target: Target, fresh: () => Promise<void>): Promise<Result> => {
    await fresh()
    await generate(target, options.warmup)
    const readsBefore = options.buffers ? await Meters.bufferReads(db) : undefined
    const t = tally()
    await measureSlice(target, options.seconds, t)
    if (readsBefore === undefined) return resultOf(target, t)
    await new Promise((ok) => setTimeout(ok, 11_000))
    const requests = Math.max(1, t.requests)
    const perReq = [...await Meters.bufferReads(db)].map(([name, n]) =>
      [name, (n - (readsBefore.get(name) ?? 0)) / requests] as const
    )
    return resultOf(target, t, {
      perReq: perReq.find(([name]) => name === "(all)")?.[1] ?? 0,
      byRelation: perReq.filter(([name, n]) => name !== "(all)" && n >= 0.01).sort((a, b) => b[1] - a[1])
    })
  }

  /**
   * The targets of a round interleaved: `fresh`, each target warmed up, then the measured seconds
   * of each in slices taken in turn, so that every target meets the host's slow and fast moments
   * alike. The round's first target is rotated from round to round.
   */
  const interleaved = async (
    targets: ReadonlyArray<Target>,
    round: number,
    fresh: () => Promise<void>
  ): Promise<Array<Result>> => {
    const order = targets.map((_, i) => targets[(i + round - 1) % targets.length]!)
    await fresh()
    for (const target of order) await generate(target, options.warmup)
    const tallies = new Map(targets.map((t) => [t, tally()]))
    for (let slice = 0; slice < Math.max(1, Math.round(options.seconds / options.slice)); slice++) {
      for (const target of order) await measureSlice(target, options.slice, tallies.get(target)!)
    }
    return targets.map((t) => resultOf(t, tallies.get(t)!))
  }

  return { whole, interleaved }
}
