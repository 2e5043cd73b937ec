/**
 * A probe of `pnpm bench` (`BENCH_AGAINST=bench/src/grouped.ts`): the bare baseline's upsert with
 * its requests grouped as the service groups actions, to tell what grouping itself does to the tail.
 *
 * Requests that arrive together share one transaction in the service's shape (`BEGIN` sent with the
 * batch's row locks, the writes, `COMMIT`: three round trips), one batch at a time and a second
 * beside it once 24 wait, at most 100 a batch, as the reference server's ingest. It answers any POST
 * (the bench sends it the service's `POST /v1/server/e`) with 202, any other request with 200. To
 * bring its costs towards the service's: `GROUPED_FRONT_US` (server CPU per request on arrival,
 * spun), `GROUPED_BATCH_US` (per action between the locks and the writes, where the service runs
 * its calculus), `GROUPED_PG_ROWS` (Postgres CPU: rows of a `generate_series` counted per action
 * in the writes' statement), and `GROUPED_ALLOC_KB` / `GROUPED_HOLD_KB` (small objects per
 * request, about that many KB × 1.4, dropped at once / held until the action is answered), each
 * given through `BENCH_AGAINST_FLAGS="--env-file=…"`.
 */
import { createServer, type ServerResponse } from "node:http"
import pg from "pg"

const url = process.env.DATABASE_URL!
const port = Number(process.env.PORT ?? 0)
const frontUs = Number(process.env.GROUPED_FRONT_US ?? 0)
const batchUs = Number(process.env.GROUPED_BATCH_US ?? 0)
const pgRows = Number(process.env.GROUPED_PG_ROWS ?? 0)
const allocKb = Number(process.env.GROUPED_ALLOC_KB ?? 0)
const holdKb = Number(process.env.GROUPED_HOLD_KB ?? 0)
const workers = 2
const minBatchBeside = 24
const maxBatch = 100
const pool = new pg.Pool({ connectionString: url, max: workers })

/** Holds the CPU for `us` microseconds: the service's own work per action, without its allocations. */
const spin = (us: number) => {
  const end = performance.now() + us / 1000
  while (performance.now() < end) {
    // spinning
  }
}

/** Small objects of about `kb` × 1.4 KB in all. */
const garbage = (kb: number): Array<unknown> => {
  const objects: Array<unknown> = []
  // An object of three fields with a short string and an array: about 140 bytes.
  for (let i = 0; i < kb * 10; i++) objects.push({ i, s: `k${i}`, a: [i] })
  return objects
}

interface Waiting {
  readonly siteKey: string
  readonly userHash: string
  readonly event: string
  readonly res: ServerResponse
  /** Never read: it keeps `GROUPED_HOLD_KB`'s objects alive until the action is answered. */
  readonly held: Array<unknown> | undefined
}
let waiting: Array<Waiting> = []
let running = 0
let pumpQueued = false

const send = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

// The batch's keys, counted, into the baseline's table: its rows and its semantics.
const upsert = {
  name: "grouped_upsert",
  text: `insert into bench_daily_activity (site_key, user_hash, event, day, count)
    select s, u, e, current_date, c from unnest($1::text[], $2::text[], $3::text[], $4::int[]) t (s, u, e, c)
    where $5::int = 0 or (select count(*) from generate_series(1, $5::int)) >= 0
    on conflict (site_key, user_hash, event, day) do update set count = bench_daily_activity.count + excluded.count`
}

/** A text array as a quoted literal: node-postgres sends parameters only with one statement at a time. */
const arrayLiteral = (client: pg.PoolClient, xs: ReadonlyArray<string>) =>
  `${client.escapeLiteral(`{${xs.map((x) => `"${x.replace(/["\\]/g, "\\$&")}"`).join(",")}}`)}::text[]`

const write = async (batch: ReadonlyArray<Waiting>) => {
  const counted = new Map<string, { siteKey: string; userHash: string; event: string; count: number }>()
  for (const w of batch) {
    const key = `${w.siteKey}\u0000${w.userHash}\u0000${w.event}`
    const found = counted.get(key)
    if (found !== undefined) found.count++
    else counted.set(key, { siteKey: w.siteKey, userHash: w.userHash, event: w.event, count: 1 })
  }
  const rows = [...counted.values()]
  const siteKeys = rows.map((r) => r.siteKey)
  const userHashes = rows.map((r) => r.userHash)
  const events = rows.map((r) => r.event)
  const client = await pool.connect()
  try {
    // `BEGIN` in one message with the locks, as the service sends it with its first statement.
    await client.query(
      `begin; select a.count from unnest(${arrayLiteral(client, siteKeys)}, ${arrayLiteral(client, userHashes)}, ${
        arrayLiteral(client, events)
      }) k (s, u, e) cross join lateral (select count from bench_daily_activity a where a.site_key = k.s
        and a.user_hash = k.u and a.event = k.e and a.day = current_date for update) a`
    )
    if (batchUs > 0) spin(batchUs * batch.length)
    await client.query({
      ...upsert,
      values: [siteKeys, userHashes, events, rows.map((r) => r.count), pgRows * batch.length]
    })
    await client.query("commit")
  } catch (e) {
    await client.query("rollback").catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

const pump = () => {
  pumpQueued = false
  while (waiting.length > 0 && (running === 0 || (running < workers && waiting.length >= minBatchBeside))) {
    const batch = waiting.slice(0, maxBatch)
    waiting = waiting.slice(maxBatch)
    running++
    write(batch).then(
      () => batch.forEach((w) => send(w.res, 202, `{"ok":true}`)),
      () => batch.forEach((w) => send(w.res, 500, `{"error":"INTERNAL"}`))
    ).finally(() => {
      running--
      pump()
    })
  }
}

// The body is read and answered as `baseline.ts` does, copied rather than shared: the baseline stays
// one file that stands alone, the yardstick every figure is taken with.
const server = createServer((req, res) => {
  if (req.method !== "POST") return send(res, 200, `{"ok":true}`)
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c)).on("end", () => {
    let body: { siteKey: string; userHash: string; event: string }
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return send(res, 400, `{"error":"INVALID_BODY"}`)
    }
    if (frontUs > 0) spin(frontUs)
    // Dropped at once, but through a global, so that V8 cannot leave the allocation out.
    if (allocKb > 0) (globalThis as { groupedDropped?: unknown }).groupedDropped = garbage(allocKb)
    waiting.push({
      siteKey: body.siteKey,
      userHash: body.userHash,
      event: body.event,
      res,
      held: holdKb > 0 ? garbage(holdKb) : undefined
    })
    // Everything that arrives in this turn of the event loop joins the same batch.
    if (!pumpQueued) {
      pumpQueued = true
      process.nextTick(pump)
    }
  })
})

server.listen(port, "127.0.0.1")
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))))
