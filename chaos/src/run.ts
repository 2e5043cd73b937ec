/**
 * `pnpm chaos`: the service under faults, on this machine only (127.0.0.1), bounded in time.
 *
 * 1. Replicas killed: three replicas of `streaks serve` on one fresh database of the machine's
 *    Postgres, under steady ingest with idempotency keys; every few seconds one replica is killed
 *    with SIGKILL and started again. Every action answered 2xx must be stored exactly once; every
 *    outbound event produced must reach each subscription's receiver (deduplicated by `webhook-id`).
 * 2. A receiver that is down, then slow, then answers 1 GB: its deliveries complete once it
 *    answers, and the replicas' memory stays flat while it streams.
 * 3. Postgres stopped and started under load (a throwaway embedded cluster, never the machine's
 *    Postgres): answers stay fast (503 while it is down, none slower than 2 s), the replicas recover
 *    without a restart, and no acknowledged action is lost.
 *
 * Prints a table and exits 1 if any check fails. `DATABASE_URL` names the machine's Postgres
 * (default postgres://postgres@127.0.0.1:5432/postgres); `CHAOS_SECONDS` the length of the load in
 * scenario 1 (default 40).
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { embeddedCluster, freshDatabase, query } from "./databases.js"
import { call, sleep } from "./http.js"
import { byStatus, Load } from "./load.js"
import { Receiver } from "./receivers.js"
import { Replica } from "./replicas.js"

const ADMIN = `chaos-admin-${randomBytes(8).toString("hex")}`
const SECRET_KEY = randomBytes(32).toString("hex")
const adminUrl = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
const loadSeconds = Number(process.env["CHAOS_SECONDS"] ?? 40)
const dataDir = mkdtempSync(join(tmpdir(), "streaks-chaos-"))

interface Row {
  readonly scenario: string
  readonly check: string
  readonly figure: string
  readonly ok: boolean
}
const rows: Array<Row> = []
const record = (scenario: string, check: string, figure: string, ok: boolean) => {
  rows.push({ scenario, check, figure, ok })
  console.log(`${ok ? "ok  " : "FAIL"} ${scenario} | ${check} | ${figure}`)
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

const envFor = (databaseUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  STREAKS_SECRET_KEY: SECRET_KEY,
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_DATA_DIR: dataDir,
  // The receivers listen on 127.0.0.1.
  STREAKS_ALLOW_INSECURE_WEBHOOK_URLS: "true",
  STREAKS_RATE_LIMIT_IP: "0",
  STREAKS_RATE_LIMIT_SITE: "0",
  STREAKS_DB_POOL_SIZE: "4"
})

const admin = async (port: number, path: string, body: unknown, method = "POST") => {
  const reply = await call(port, method, path, { headers: { "x-admin-token": ADMIN }, body })
  if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${JSON.stringify(reply.body)}`)
  return reply.body
}

/** A live program with a milestone at one day (a coupon): each new member's first action fires two events. */
const provision = async (port: number, eventKey: string, workspace?: { id: string; apiKey: string }) => {
  const ws = workspace ?? await (async () => {
    const created = await admin(port, "/admin/workspaces", { name: "Chaos", plan: "pro" })
    const key = await admin(port, `/admin/workspaces/${created.id}/api-keys`, { name: "chaos" })
    return { id: created.id as string, apiKey: key.key as string }
  })()
  const project = await admin(port, "/admin/projects", {
    workspaceId: ws.id,
    name: `Chaos ${eventKey}`,
    allowedOrigins: []
  })
  const program = await admin(port, "/admin/programs", {
    projectId: project.id,
    name: eventKey,
    eventKey,
    milestones: [{ target: 1, msg: "First day", rewardType: "coupon", rewardValue: "CHAOS-1" }]
  })
  await admin(port, `/admin/programs/${program.id}/status`, { status: "live" })
  return {
    workspace: ws,
    projectId: project.id as string,
    siteKey: project.siteKey as string,
    serverToken: project.serverToken as string,
    programId: program.id as string
  }
}

const subscribe = async (port: number, apiKey: string, programId: string, receiver: Receiver) => {
  const reply = await call(port, "POST", "/v1/api/hooks", {
    headers: { authorization: `Bearer ${apiKey}` },
    body: { programId, url: receiver.url, eventTypes: ["milestone.achieved", "reward.unlocked"] }
  })
  if (reply.status !== 201) throw new Error(`subscribe: ${reply.status} ${JSON.stringify(reply.body)}`)
  receiver.secret = reply.body.secret
  return reply.body.id as string
}

/** Waits until no message of `projectId` is pending (or `timeoutMs`); returns the ms waited. */
const drained = async (url: string, projectId: string, timeoutMs: number) => {
  const started = Date.now()
  while (Date.now() - started < timeoutMs) {
    const [row] = await query<{ n: number }>(
      url,
      "SELECT count(*)::int AS n FROM streaks_outbox WHERE project_id = $1 AND status = 'pending'",
      [projectId]
    )
    if (row!.n === 0) return Date.now() - started
    await sleep(1_000)
  }
  return undefined
}

/** Acknowledged keys stored exactly once: how many are missing, and how many keys are stored twice. */
const storedOnce = async (url: string, projectId: string, acked: ReadonlySet<string>) => {
  const rows = await query<{ key: string; n: number }>(
    url,
    "SELECT idempotency_key AS key, count(*)::int AS n FROM streaks_actions WHERE project_id = $1 AND idempotency_key IS NOT NULL GROUP BY 1",
    [projectId]
  )
  const counts = new Map(rows.map((r) => [r.key, r.n]))
  const lost = [...acked].filter((k) => !counts.has(k)).length
  const twice = rows.filter((r) => r.n > 1).length
  return { lost, twice, stored: rows.length }
}

/** The events of `projectId` against what `receivers` got, after deduplication by `webhook-id`. */
const eventsDelivered = async (url: string, projectId: string, receivers: ReadonlyMap<string, Receiver>) => {
  const messages = await query<
    { id: string; subscription_id: string; status: string; type: string; user_hash: string }
  >(
    url,
    "SELECT id, subscription_id, status, type, payload::json->'data'->>'userHash' AS user_hash FROM streaks_outbox WHERE project_id = $1",
    [projectId]
  )
  let missing = 0
  let notDelivered = 0
  for (const m of messages) {
    if (m.status !== "delivered") notDelivered++
    if (!receivers.get(m.subscription_id)?.seen.has(m.id)) missing++
  }
  const ids = new Set(messages.map((m) => m.id))
  let unknown = 0
  for (const r of receivers.values()) for (const id of r.seen.keys()) if (!ids.has(id)) unknown++
  // One event per (subscription, member, type): a retried action must not fire its events twice.
  const perEvent = new Map<string, number>()
  for (const m of messages) {
    perEvent.set(
      `${m.subscription_id}/${m.user_hash}/${m.type}`,
      (perEvent.get(`${m.subscription_id}/${m.user_hash}/${m.type}`) ?? 0) + 1
    )
  }
  const doubled = [...perEvent.values()].filter((n) => n > 1).length
  const members = new Set(messages.map((m) => m.user_hash))
  return { produced: messages.length, members, missing, notDelivered, unknown, doubled }
}

const peakRss = (replicas: ReadonlyArray<Replica>, peaks: Map<string, number>) => {
  for (const r of replicas) {
    const rss = r.rssMb()
    if (rss !== undefined) peaks.set(r.name, Math.max(peaks.get(r.name) ?? 0, rss))
  }
}

const fmt = (n: number) => n.toLocaleString("en-US")

// --- 1 and 2: three replicas on the machine's Postgres --------------------------------------------

const replicasKilled = async () => {
  const S = "replicas killed"
  const db = await freshDatabase(adminUrl)
  const ports = await Promise.all([freePort(), freePort(), freePort()])
  const replicas = ports.map((port, i) => new Replica(`r${i + 1}`, port, envFor(db.url)))
  const receivers = await Promise.all([freePort(), freePort(), freePort()]).then((ps) => ps.map((p) => new Receiver(p)))
  try {
    await Promise.all(replicas.map((r) => r.start(120_000)))
    await Promise.all(receivers.slice(0, 2).map((r) => r.listen()))
    const tenant = await provision(ports[0]!, "lesson")
    const subscriptions = new Map<string, Receiver>()
    for (const receiver of receivers.slice(0, 2)) {
      subscriptions.set(await subscribe(ports[0]!, tenant.workspace.apiKey, tenant.programId, receiver), receiver)
    }

    const load = new Load({
      ports: () => ports,
      siteKey: tenant.siteKey,
      serverToken: tenant.serverToken,
      event: "lesson",
      workers: 6,
      prefix: `a${randomBytes(3).toString("hex")}`,
      timeoutMs: 5_000,
      pauseMs: 20
    })
    const started = Date.now()
    load.start()
    const restarts: Array<Promise<void>> = []
    while (Date.now() - started < loadSeconds * 1000) {
      await sleep(4_000 + Math.random() * 2_000)
      const up = replicas.filter((r) => r.up)
      if (up.length < 2) continue
      const victim = up[Math.floor(Math.random() * up.length)]!
      await victim.kill()
      restarts.push(sleep(1_000).then(() => victim.start(120_000)))
    }
    await load.stop()
    await Promise.all(restarts)
    const kills = replicas.reduce((n, r) => n + r.kills, 0)
    const waited = await drained(db.url, tenant.projectId, 180_000)
    const stored = await storedOnce(db.url, tenant.projectId, load.acked)
    const events = await eventsDelivered(db.url, tenant.projectId, subscriptions)
    const repeats = [...subscriptions.values()].reduce((n, r) => n + r.repeats, 0)
    const invalid = [...subscriptions.values()].reduce((n, r) => n + r.invalid, 0)
    const samples = load.samples
    record(
      S,
      "3 replicas, one killed with SIGKILL every 4-6 s and restarted",
      `${kills} kills in ${loadSeconds} s of load`,
      kills >= Math.floor(loadSeconds / 8)
    )
    record(
      S,
      "answers during the load",
      `${fmt(samples.length)} requests (${byStatus(samples)})`,
      samples.every((s) => s.status < 500 || s.status === 503)
    )
    record(
      S,
      "actions answered 2xx stored exactly once",
      `${fmt(load.acked.size)} acknowledged: ${stored.lost} lost, ${stored.twice} stored twice`,
      stored.lost === 0 && stored.twice === 0 && load.acked.size > 0
    )
    record(
      S,
      "events produced, once per subscription, member and type",
      `${fmt(events.produced)} events for ${fmt(events.members.size)} members: ${events.doubled} produced twice`,
      events.doubled === 0 && events.produced === 4 * events.members.size
    )
    record(
      S,
      "every event delivered to its receiver (deduplicated by webhook-id)",
      `${fmt(events.produced - events.missing)} / ${
        fmt(events.produced)
      } received, ${events.notDelivered} not marked delivered, ${events.unknown} unknown; drained ${
        waited === undefined ? "not within 180 s" : `${(waited / 1000).toFixed(0)} s after the load`
      }`,
      events.missing === 0 && events.notDelivered === 0 && events.unknown === 0 && waited !== undefined
    )
    record(
      S,
      "repeat deliveries (at-least-once; receivers deduplicate)",
      `${repeats}; invalid signatures ${invalid}`,
      invalid === 0
    )

    // --- 2: one receiver down, then slow, then answering 1 GB ---
    const C = "receiver down/slow/1 GB"
    const rssBefore = new Map<string, number>()
    for (let i = 0; i < 10; i++) {
      peakRss(replicas, rssBefore)
      await sleep(300)
    }
    const slow = receivers[2]!
    const second = await provision(ports[0]!, "quiz", tenant.workspace)
    const only = new Map([[await subscribe(ports[0]!, tenant.workspace.apiKey, second.programId, slow), slow]])
    const act = async (prefix: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const key = `${prefix}-${i}`
        for (let attempt = 0; attempt < 20; attempt++) {
          const reply = await call(ports[i % 3]!, "POST", "/v1/server/e", {
            headers: { "x-streak-server-token": second.serverToken },
            body: { siteKey: second.siteKey, userHash: key, event: "quiz", idempotencyKey: key }
          })
          if (reply.status === 202) break
          await sleep(200)
        }
      }
    }
    await act("down", 10)
    await sleep(3_000)
    const whileDown = await query<{ n: number }>(
      db.url,
      "SELECT count(*)::int AS n FROM streaks_delivery_attempts a JOIN streaks_outbox o ON o.id = a.message_id WHERE o.project_id = $1 AND a.status IS NULL",
      [second.projectId]
    )
    record(
      C,
      "down: attempts fail and are retried later",
      `${whileDown[0]!.n} failed attempts, ${slow.requests} received`,
      whileDown[0]!.n > 0 && slow.requests === 0
    )
    slow.mode = "slow"
    await slow.listen()
    const slowStarted = Date.now()
    const slowDrained = await drained(db.url, second.projectId, 90_000)
    record(
      C,
      "slow (answers after 3 s): the retries are delivered",
      slowDrained === undefined
        ? "not within 90 s"
        : `all delivered ${((Date.now() - slowStarted) / 1000).toFixed(0)} s after it came up`,
      slowDrained !== undefined
    )
    slow.mode = "huge"
    const rssDuring = new Map<string, number>()
    const sampler = setInterval(() => peakRss(replicas, rssDuring), 200)
    const hugeStarted = Date.now()
    await act("huge", 30)
    const hugeDrained = await drained(db.url, second.projectId, 90_000)
    await sleep(2_000)
    clearInterval(sampler)
    const growth = Math.max(...replicas.map((r) => (rssDuring.get(r.name) ?? 0) - (rssBefore.get(r.name) ?? 0)))
    const all = await eventsDelivered(db.url, second.projectId, only)
    record(
      C,
      "1 GB answers: deliveries complete, the answer is not read",
      `${slow.hugeAnswers} answers of 1 GB, ${
        hugeDrained === undefined ? "not drained" : `drained in ${((Date.now() - hugeStarted) / 1000).toFixed(0)} s`
      }; at most ${(slow.largestHugeWrite / 1048576).toFixed(1)} MB of one written before the close`,
      hugeDrained !== undefined && slow.hugeAnswers > 0 && slow.largestHugeWrite < 64 * 1048576
    )
    record(
      C,
      "replicas' RSS while receivers stream 1 GB",
      `peak ${
        replicas.map((r) =>
          `${r.name} ${(rssBefore.get(r.name) ?? 0).toFixed(0)}→${(rssDuring.get(r.name) ?? 0).toFixed(0)} MB`
        ).join(", ")
      } (largest growth ${growth.toFixed(0)} MB)`,
      growth < 64
    )
    record(
      C,
      "every event delivered once it answers",
      `${all.produced - all.missing} / ${all.produced} received, ${all.notDelivered} not marked delivered`,
      all.missing === 0 && all.notDelivered === 0 && all.produced > 0
    )
  } finally {
    await Promise.all(replicas.map((r) => r.stop()))
    await Promise.all(receivers.map((r) => r.close()))
    await db.drop().catch(() => {})
  }
}

// --- 3: Postgres stopped and started under load (embedded, throwaway) -------------------------------

const postgresStopped = async () => {
  const S = "Postgres stopped"
  const cluster = await embeddedCluster()
  const ports = await Promise.all([freePort(), freePort()])
  let replicas: Array<Replica> = []
  try {
    await cluster.start()
    replicas = ports.map((port, i) => new Replica(`p${i + 1}`, port, envFor(cluster.url())))
    await Promise.all(replicas.map((r) => r.start(120_000)))
    const tenant = await provision(ports[0]!, "lesson")
    const load = new Load({
      ports: () => ports,
      siteKey: tenant.siteKey,
      serverToken: tenant.serverToken,
      event: "lesson",
      workers: 4,
      prefix: `b${randomBytes(3).toString("hex")}`,
      timeoutMs: 5_000,
      pauseMs: 20
    })
    load.start()
    await sleep(6_000)
    const down = Date.now()
    await cluster.stop()
    const stopped = Date.now()
    await sleep(2_000)
    const readyDown = await call(ports[0]!, "GET", "/ready", { timeoutMs: 5_000 })
    await sleep(6_000)
    const upAt = Date.now()
    await cluster.start()
    const restarted = Date.now()
    await sleep(12_000)
    const readyUp = await call(ports[0]!, "GET", "/ready", { timeoutMs: 5_000 })
    await load.stop()
    const pidsKept = replicas.every((r) => r.starts === 1 && r.up)
    const whileDown = load.between(stopped, upAt)
    const slowest = Math.max(0, ...whileDown.map((s) => s.ms))
    const after = load.between(restarted, Date.now())
    const firstOk = after.find((s) => s.status >= 200 && s.status < 300)
    const stored = await storedOnce(cluster.url(), tenant.projectId, load.acked)
    record(
      S,
      "answers while it is down",
      `${fmt(whileDown.length)} requests (${byStatus(whileDown)}); slowest ${
        slowest.toFixed(0)
      } ms; /ready ${readyDown.status}`,
      whileDown.length > 0 && slowest <= 2_000 && whileDown.every((s) => s.status === 503) && readyDown.status === 503
    )
    record(
      S,
      "recovery without a restart",
      `first 2xx ${
        firstOk === undefined ? "never" : `${((firstOk.at - restarted) / 1000).toFixed(1)} s`
      } after Postgres was back (stopped ${((stopped - down) / 1000).toFixed(1)} s, restarted in ${
        ((restarted - upAt) / 1000).toFixed(1)
      } s); ${fmt(after.length)} requests after (${
        byStatus(after)
      }); /ready ${readyUp.status}; replicas never restarted: ${pidsKept}`,
      firstOk !== undefined && pidsKept && readyUp.status === 200
    )
    record(
      S,
      "actions answered 2xx stored exactly once",
      `${fmt(load.acked.size)} acknowledged: ${stored.lost} lost, ${stored.twice} stored twice`,
      stored.lost === 0 && stored.twice === 0 && load.acked.size > 0
    )
  } finally {
    await Promise.all(replicas.map((r) => r.stop()))
    await cluster.remove()
  }
}

/** The whole run's bound: a run that hangs is a failure too. */
const deadlineMinutes = 20

const main = async () => {
  const started = Date.now()
  setTimeout(() => {
    console.error(`the chaos run did not finish within ${deadlineMinutes} minutes`)
    process.exit(1)
  }, deadlineMinutes * 60_000).unref()
  let crashed: unknown = undefined
  try {
    await replicasKilled()
    await postgresStopped()
  } catch (e) {
    crashed = e
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
  console.log(`\n| Scenario | Check | Figure | Result |\n|---|---|---|---|`)
  for (const r of rows) console.log(`| ${r.scenario} | ${r.check} | ${r.figure} | ${r.ok ? "ok" : "**FAIL**"} |`)
  console.log(
    `\n${rows.filter((r) => r.ok).length} of ${rows.length} checks passed in ${
      ((Date.now() - started) / 1000).toFixed(0)
    } s`
  )
  if (crashed !== undefined) {
    console.error("the chaos run stopped early:", crashed)
    process.exit(1)
  }
  process.exit(rows.every((r) => r.ok) ? 0 : 1)
}

main()
