/**
 * Round trips to Postgres per ingest group, counted on the socket of the transaction's connection:
 * the shape docs/architecture.md (step 7) promises, `BEGIN` with the reads and locks, the writes,
 * `COMMIT`, and one more for a late action, a key's first action or a crossed milestone.
 */
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { DirectoryCache, EventInput, Ingest, OutboxSignal, Provisioning, SecretBox, Services } from "@streaks/core"
import { Clock, Effect, Layer, Redacted } from "effect"
import type pg from "pg"
import * as Pools from "../src/internal/Pools.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

/**
 * One round trip: what the client writes on a connection before it next hears from the server,
 * named by the statements it carries. A write made after the connection received anything opens
 * the next one; so statements sent without waiting for each other's answers share a trip.
 */
interface Trip {
  readonly statements: Array<string>
  /** How many writes reached the socket (the adapter's clients hold a tick's statements for one). */
  flushes: number
}

/** One transaction on one connection: from the trip that carries `BEGIN` to the one that carries `COMMIT`. */
interface Transaction {
  readonly trips: Array<Trip>
  /** The members whose actions were planned while it was open, once each (a plan may be made twice). */
  readonly members: Array<string>
}

interface Connection {
  /** Whether the server sent anything since the client last wrote. */
  answered: boolean
  trip: Trip | undefined
  transaction: Transaction | undefined
  /** The transaction ends with the trip that carries `COMMIT` (or `ROLLBACK`). */
  ending: boolean
  /** The statement being issued: it owns the next write. */
  issuing: string | undefined
}

/** A statement's verb and the tables it names: enough to tell the statements of a group apart. */
const nameOf = (text: string): string => {
  const verb = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "?"
  const tables = [...new Set([...text.matchAll(/streaks_(\w+)/g)].map((m) => m[1]!))]
  return tables.length === 0 ? verb : `${verb} ${tables.join(",")}`
}

/** What the connections of the test's pool sent since `reset`, as transactions of round trips. */
const wire = {
  transactions: [] as Array<Transaction>,
  /** Trips sent outside any transaction. */
  outside: [] as Array<Trip>,
  /** The transaction being run (one at a time: `Ingest` runs one group at a time by default). */
  open: undefined as Transaction | undefined,
  reset() {
    this.transactions = []
    this.outside = []
  }
}

/** Books a write of connection `c` on its round trip, opening the next one if the server answered since. */
const onWrite = (c: Connection): void => {
  const statement = c.issuing
  c.issuing = undefined
  if (statement === "BEGIN") {
    c.transaction = { trips: [], members: [] }
    wire.transactions.push(c.transaction)
    wire.open = c.transaction
    c.ending = false
    c.trip = undefined
  }
  if (c.trip === undefined || c.answered) {
    if (c.ending) {
      c.transaction = undefined
      c.ending = false
    }
    c.trip = { statements: [], flushes: 0 }
    ;(c.transaction?.trips ?? wire.outside).push(c.trip)
    c.answered = false
  }
  if (statement === undefined) return
  c.trip.statements.push(statement)
  if (statement === "COMMIT" || statement === "ROLLBACK") {
    c.ending = true
    if (wire.open === c.transaction) wire.open = undefined
  }
}

type Method = (this: unknown, ...args: Array<unknown>) => unknown

/** Replaces `object[name]` by `around`, which calls the original. */
const wrap = (object: object, name: string, around: (original: Method) => Method): void => {
  const target = object as Record<string, Method>
  const original = target[name]
  if (typeof original === "function") target[name] = around(original)
}

const watched = new WeakSet<pg.PoolClient>()

/**
 * Watches a pooled client: each write on its socket, each arrival of data, and the text of each
 * statement it is asked to run, to name the trips (node-postgres writes a statement's messages
 * while `query` runs, in pipeline mode as the adapter's pool is).
 */
const watch = (client: pg.PoolClient): void => {
  if (watched.has(client)) return
  watched.add(client)
  const socket = (client as unknown as { readonly connection: { readonly stream: NodeJS.EventEmitter } }).connection
    .stream
  const c: Connection = { answered: false, trip: undefined, transaction: undefined, ending: false, issuing: undefined }
  wrap(socket, "write", (write) =>
    function(...args) {
      onWrite(c)
      return write.apply(this, args)
    })
  // The socket's own writes (the writable side's `_write`/`_writev`): buffered messages leaving.
  for (const name of ["_write", "_writev"]) {
    wrap(socket, name, (flush) =>
      function(...args) {
        if (c.trip !== undefined) c.trip.flushes++
        return flush.apply(this, args)
      })
  }
  // Ahead of the driver's own listener, whose callbacks may write the next statements at once.
  socket.prependListener("data", () => {
    c.answered = true
  })
  wrap(client, "query", (query) =>
    function(config, ...rest) {
      const text = typeof config === "string" ? config : (config as { readonly text?: unknown } | null)?.text
      c.issuing = typeof text === "string" ? nameOf(text) : "?"
      return query.call(this, config, ...rest)
    })
}

/** The test's pool, watched from the moment it hands out a connection. */
const watching = Layer.scopedDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => {
  const pool = Pools.poolOf(sql)
  if (pool === undefined) return Effect.dieMessage("the test's SqlClient is not a PgConnection pool")
  return Effect.acquireRelease(
    Effect.sync(() => pool.on("acquire", watch)),
    () => Effect.sync(() => pool.off("acquire", watch))
  )
}))

const services = Services.layerWith({
  ingest: {
    planCheck: (work) => {
      const planning = wire.open?.members
      if (planning !== undefined && !planning.includes(work.action.userHash)) planning.push(work.action.userHash)
    }
  }
}).pipe(
  // As the server runs it: a warm cache answers the action's program without a statement.
  Layer.provide(DirectoryCache.layer({ ttl: "1 hour" })),
  Layer.provideMerge(
    Layer.mergeAll(PgStorage.layer(), SecretBox.layer(Redacted.make("pg-test-key")), OutboxSignal.layerNoop)
  ),
  Layer.provideMerge(watching),
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

const DAY = 86_400_000

/** A live project and program; its one milestone at `target` days. */
const tenant = (eventKey: string, target: number) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning.Provisioning
    const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "pro" })
    const project = yield* provisioning.createProject({ workspaceId: workspace.id, name: "App", allowedOrigins: [] })
    const program = yield* provisioning.createProgram({
      projectId: project.project.id,
      name: "Lessons",
      eventKey,
      milestones: [{ target, msg: `Day ${target}` }]
    })
    yield* provisioning.setProgramStatus(program.program.id, "live")
    return { project: project.project, serverToken: project.serverToken, eventKey }
  })

type Tenant = Effect.Effect.Success<ReturnType<typeof tenant>>

interface Act {
  readonly userHash: string
  readonly key?: string
  /** Milliseconds before now; none: now. */
  readonly ago?: number
}

const record = (t: Tenant, act: Act) =>
  Effect.gen(function*() {
    const action = yield* EventInput.decodeEventRecord({
      siteKey: t.project.siteKey,
      userHash: act.userHash,
      event: t.eventKey,
      ...(act.key !== undefined ? { idempotencyKey: act.key } : {}),
      ...(act.ago !== undefined ? { ts: new Date(Date.now() - act.ago).toISOString() } : {})
    })
    const answer = yield* Effect.flatMap(
      Ingest.Ingest,
      (i) => i.record({ project: t.project, action, auth: { door: "server", serverToken: t.serverToken } })
    )
    return answer.body
  })

/**
 * The actions submitted in one turn (the first finds no group busy and goes alone; the others form
 * the next group), and the transactions they cost, with nothing else sent meanwhile.
 */
const measured = (t: Tenant, acts: ReadonlyArray<Act>) =>
  Effect.gen(function*() {
    wire.reset()
    const answers = yield* Effect.forEach(acts, (a) => record(t, a), { concurrency: "unbounded" })
    for (const answer of answers) assert.deepStrictEqual(answer, { ok: true, counted: true })
    assert.deepStrictEqual(wire.outside, [], "no statement of the groups outside their transactions")
    return wire.transactions
  })

const show = (tx: Transaction): string =>
  tx.trips.map((trip, n) => `${n + 1}: ${trip.statements.join(" | ")}`).join("\n")

/**
 * At most `bound` round trips from `BEGIN` to `COMMIT`: the first carries `BEGIN` with the group's
 * first reads, the last `COMMIT` alone, and each leaves in one write, so the count does not
 * depend on how fast the server answers.
 */
const assertTrips = (tx: Transaction, bound: number, what: string): void => {
  const message = `${what}, ${tx.trips.length} round trips:\n${show(tx)}`
  assert.isAtMost(tx.trips.length, bound, message)
  assert.strictEqual(tx.trips[0]!.statements[0], "BEGIN", message)
  assert.isAbove(tx.trips[0]!.statements.length, 1, `BEGIN goes out with the first reads: ${message}`)
  assert.deepStrictEqual(tx.trips[tx.trips.length - 1]!.statements, ["COMMIT"], message)
  assert.deepStrictEqual(tx.trips.map((trip) => trip.flushes), tx.trips.map(() => 1), `one write per trip: ${message}`)
}

const members = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`)

/** Each member acts yesterday, one group each: their rows exist, and the program is in the cache. */
const actedBefore = (t: Tenant, who: ReadonlyArray<string>) =>
  Effect.forEach(who, (userHash) => record(t, { userHash, ago: DAY }), { discard: true })

layer(services, { timeout: "120 seconds" })("IngestStore on Postgres: round trips per group", (it) => {
  it.effect("one member who acted before: BEGIN with the reads and locks, the writes, COMMIT (3 round trips)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("solo", 30)
      yield* actedBefore(t, ["solo"])
      const [tx, ...more] = yield* measured(t, [{ userHash: "solo" }])
      assert.strictEqual(more.length, 0)
      assert.deepStrictEqual(tx!.members, ["solo"])
      assertTrips(tx!, 3, "one member")
    }))

  it.effect("sixteen members who acted before, in one group: the same 3 round trips", () =>
    Effect.gen(function*() {
      const t = yield* tenant("crowd", 30)
      const crowd = members("crowd", 16)
      yield* actedBefore(t, ["lead", ...crowd])
      const txs = yield* measured(t, ["lead", ...crowd].map((userHash) => ({ userHash })))
      assert.deepStrictEqual(txs.map((tx) => tx.members), [["lead"], crowd])
      assertTrips(txs[0]!, 3, "the lead's group of one")
      assertTrips(txs[1]!, 3, "a group of sixteen")
    }))

  it.effect("sixteen members with idempotency keys: the claims go out with the reads, the answers with the writes (3 round trips)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("keyed", 30)
      const crowd = members("keyed", 16)
      yield* actedBefore(t, ["lead", ...crowd])
      const txs = yield* measured(t, ["lead", ...crowd].map((userHash) => ({ userHash, key: `k-${userHash}` })))
      assert.deepStrictEqual(txs.map((tx) => tx.members), [["lead"], crowd])
      assertTrips(txs[0]!, 3, "a keyed group of one")
      assertTrips(txs[1]!, 3, "a keyed group of sixteen")
    }))

  it.effect("a late action adds one round trip, its key's days (4)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("late", 30)
      yield* record(t, { userHash: "late", ago: 2 * DAY })
      yield* record(t, { userHash: "late" })
      const [tx, ...more] = yield* measured(t, [{ userHash: "late", ago: DAY }])
      assert.strictEqual(more.length, 0)
      assertTrips(tx!, 4, "a late action")
    }))

  it.effect("members acting for the first time add one round trip, creating their rows (4)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("first", 30)
      const crowd = members("first", 16)
      yield* actedBefore(t, ["lead"])
      const txs = yield* measured(t, ["lead", ...crowd].map((userHash) => ({ userHash })))
      assert.deepStrictEqual(txs.map((tx) => tx.members), [["lead"], crowd])
      assertTrips(txs[1]!, 4, "a group of first actions")
    }))

  it.effect("crossing a milestone adds one round trip, the program's audience (4)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("crossing", 2)
      const crowd = members("crossing", 16)
      yield* actedBefore(t, ["lead", ...crowd])
      const txs = yield* measured(t, ["lead", ...crowd].map((userHash) => ({ userHash })))
      assert.deepStrictEqual(txs.map((tx) => tx.members), [["lead"], crowd])
      assertTrips(txs[1]!, 4, "a group crossing a milestone")
    }))
})
