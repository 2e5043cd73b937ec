/**
 * The baseline of `pnpm bench`: a bare node:http + pg server that parses the JSON body and does
 * one `INSERT … ON CONFLICT DO UPDATE` into a daily-activity table (POST /e), and answers a bare
 * `SELECT` (GET /state). No framework, no validation: the floor the real service is measured by.
 */
import { createServer } from "node:http"
import pg from "pg"

const url = process.env.DATABASE_URL!
const port = Number(process.env.PORT ?? 0)
const pool = new pg.Pool({ connectionString: url, max: 10 })

// Its key compares bytes, as the service's do since migration 0004: both sides seek alike.
await pool.query(`create table if not exists bench_daily_activity (
  site_key text collate "C" not null, user_hash text collate "C" not null, event text collate "C" not null, day date not null,
  count int not null default 1, primary key (site_key, user_hash, event, day))`)

const send = (res: import("node:http").ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = createServer((req, res) => {
  if (req.method === "POST" && req.url === "/e") {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c)).on("end", () => {
      let body: { siteKey: string; userHash: string; event: string }
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        return send(res, 400, `{"error":"INVALID_BODY"}`)
      }
      pool.query(
        `insert into bench_daily_activity (site_key, user_hash, event, day) values ($1, $2, $3, current_date)
         on conflict (site_key, user_hash, event, day) do update set count = bench_daily_activity.count + 1`,
        [body.siteKey, body.userHash, body.event]
      ).then(() => send(res, 202, `{"ok":true}`), () => send(res, 500, `{"error":"INTERNAL"}`))
    })
    return
  }
  if (req.method === "GET" && req.url?.startsWith("/state?")) {
    const q = new URLSearchParams(req.url.slice(7))
    pool.query(
      `select day::text, count from bench_daily_activity where site_key = $1 and user_hash = $2 and event = $3
       order by day desc limit 7`,
      [q.get("siteKey"), q.get("userHash"), q.get("event")]
    ).then((r) => send(res, 200, JSON.stringify({ days: r.rows })), () => send(res, 500, `{"error":"INTERNAL"}`))
    return
  }
  send(res, 404, `{"error":"NOT_FOUND"}`)
})

server.listen(port, "127.0.0.1", () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === "object" && address !== null ? address.port : port}\n`)
})
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))))
