/**
 * What a benchmark run costs, read around it: CPU time by process and for the whole machine (from
 * /proc), Postgres's WAL position and records, and the pages read into its shared buffers.
 */
import { readdirSync, readFileSync } from "node:fs"
import type pg from "pg"

/** A process's resident set size now, MB (from /proc). */
export const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb / 1024
}

/** CPU seconds (user + system) in a /proc/<pid>/stat text (clock ticks of 10 ms). */
const cpuOfStat = (stat: string): number => {
  const fields = stat.split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** CPU seconds (user + system) the process has used, from /proc. */
export const cpuOf = (pid: number): number => cpuOfStat(readFileSync(`/proc/${pid}/stat`, "utf8"))

/**
 * CPU seconds (by pid) of every Postgres process on the machine (the embedded cluster's or the
 * machine's own): what the database spends per request, beside the server's own figure.
 */
export const postgresCpu = (): Map<number, number> => {
  const byPid = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.includes("(postgres)")) byPid.set(Number(entry), cpuOfStat(stat))
    } catch {
      // the process ended meanwhile
    }
  }
  return byPid
}

/** The machine's CPU ticks so far: idle (with I/O wait) and in all, from /proc/stat. */
export const machineTicks = (): { readonly idle: number; readonly total: number } => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number)
  return { idle: fields[3]! + fields[4]!, total: fields.reduce((a, b) => a + b, 0) }
}

/** Postgres CPU seconds between two snapshots (a process started meanwhile counts in full). */
export const postgresCpuSince = (before: Map<number, number>): number => {
  let total = 0
  for (const [pid, cpu] of postgresCpu()) total += cpu - (before.get(pid) ?? 0)
  return total
}

/** Pages read into shared buffers so far, by table and index of the bench's database, and in all. */
export const bufferReads = async (client: pg.Client): Promise<Map<string, number>> => {
  const { rows } = await client.query(
    `select relname as name, heap_blks_read::float8 as n from pg_statio_user_tables
     union all select indexrelname, idx_blks_read::float8 from pg_statio_user_indexes
     union all select '(all)', blks_read::float8 from pg_stat_database where datname = current_database()`
  )
  return new Map(rows.map((r: { name: string; n: number }) => [r.name, r.n]))
}

const lsn = (bytes: number) => `${Math.floor(bytes / 2 ** 32).toString(16)}/${(bytes % 2 ** 32).toString(16)}`

/** The WAL records between two positions, per request and by record type (`pg_walinspect`, Postgres 15+). */
export const walRecordsOf = async (client: pg.Client, from: number, to: number, requests: number) => {
  if (to <= from) return []
  // Postgres 15 reads only WAL already flushed; the WAL writer flushes within a fraction of a second.
  for (let tries = 0; tries < 50; tries++) {
    const { rows } = await client.query("select pg_current_wal_flush_lsn() >= $1::pg_lsn as flushed", [lsn(to)])
    if (rows[0].flushed === true) break
    await new Promise((ok) => setTimeout(ok, 100))
  }
  const { rows } = await client.query(
    `select "resource_manager/record_type" as type, count, record_size, fpi_size
     from pg_get_wal_stats($1, $2, true) where count > 0 order by combined_size desc`,
    [lsn(from), lsn(to)]
  )
  return rows
    .map((r) => ({
      type: String(r.type),
      perReq: Number(r.count) / requests,
      bytes: Number(r.record_size) / requests,
      fpiBytes: Number(r.fpi_size) / requests
    }))
    .filter((r) => r.perReq >= 0.01)
}

/** The cluster's WAL insert position in bytes (the runs are sequential, so a difference is one run's). */
export const walPosition = async (client: pg.Client): Promise<number> => {
  const { rows } = await client.query("select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::float8 as b")
  return Number(rows[0].b)
}
