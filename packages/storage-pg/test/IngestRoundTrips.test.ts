/**
 * Round trips to Postgres per ingest group, counted on the socket of the transaction's connection:
 * the shape docs/architecture.md (step 7) promises, `BEGIN` with the reads and locks, the writes,
 * `COMMIT`, and one more for a late action, a key's first action or a crossed milestone.
 */
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { DirectoryCache, EventInput, Ingest, OutboxSignal, Provisioning, SecretBox, Services } from "@streaks/core"
import * as Reactivity from "@effect/experimental/Reactivity"
import { PgClient } from "@effect/sql-pg"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import * as Socket from "../src/internal/socket.js"
import * as PgConnection from "../src/PgConnection.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

/**
 * One round trip: what the client writes on a connection before it next hears from the server,
 * named by the statements it carries. A write made after the connection received anything opens
 * the next one; so statements sent without waiting for each other's answers share a trip.
 */
interface Trip {
  readonly statements: Array<string>
  /** How many writes reached the network (the adapter's sockets hold a tick's statements for one). */
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
  /** The texts of the connection's named statements, by name (a named statement is parsed once). */
  readonly named: Map<string, string>
  /** The text of the last unnamed statement parsed: the next unnamed `Bind` runs it. */
  unnamed: string
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

/** Books a statement of connection `c` on its round trip, opening the next one if the server answered since. */
const onStatement = (c: Connection, statement: string): void => {
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
  c.trip.statements.push(statement)
  if (statement === "COMMIT" || statement === "ROLLBACK") {
    c.ending = true
    if (wire.open === c.transaction) wire.open = undefined
  }
}

/** A C string of the protocol at `at`, and where the next field starts. */
const cstring = (b: Buffer, at: number): [string, number] => {
  const end = b.indexOf(0, at)
  return [b.toString("utf8", at, end), end + 1]
}

/**
 * The statements in bytes the client writes, from the protocol's own messages: a simple query
 * (`Q`) is one; an extended one is its `Bind` (`B`), named by the `Parse` (`P`) of its text,
 * which a named statement sends only the first time. Other messages name no statement.
 */
const statementsIn = (c: Connection, chunk: Buffer): Array<string> => {
  const found: Array<string> = []
  // The startup message has no type byte (its length comes first): nothing to read in it.
  if (chunk.length === 0 || chunk[0] === 0) return found
  for (let at = 0; at + 5 <= chunk.length;) {
    const type = String.fromCharCode(chunk[at]!)
    const end = at + 1 + chunk.readInt32BE(at + 1)
    if (type === "Q") found.push(nameOf(cstring(chunk, at + 5)[0]))
    if (type === "P") {
      const [name, next] = cstring(chunk, at + 5)
      const [text] = cstring(chunk, next)
      if (name === "") c.unnamed = text
      else c.named.set(name, text)
    }
    if (type === "B") {
      const [, next] = cstring(chunk, at + 5)
      const [name] = cstring(chunk, next)
      found.push(nameOf(name === "" ? c.unnamed : c.named.get(name) ?? "?"))
    }
    at = end
  }
  return found
}

type Method = (this: unknown, ...args: Array<unknown>) => unknown

/** Replaces `object[name]` by `around`, which calls the original. */
const wrap = (object: object, name: string, around: (original: Method) => Method): void => {
  const target = object as Record<string, Method>
  const original = target[name]
  if (typeof original === "function") target[name] = around(original)
}

/**
 * The adapter's socket for one pooled connection, watched: the statements in each write reaching
 * the network (the writable side's `_write`/`_writev`, read from the protocol's bytes), and each
 * arrival of data.
 */
const watched = (): ReturnType<typeof Socket.make> => {
  const socket = Socket.make()
  const c: Connection = {
    answered: false,
    trip: undefined,
    transaction: undefined,
    ending: false,
    named: new Map(),
    unnamed: "?"
  }
  const leaving = (chunks: ReadonlyArray<unknown>) => {
    const statements = chunks.flatMap((chunk) =>
      statementsIn(c, typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array))
    )
    for (const statement of statements) onStatement(c, statement)
    if (statements.length > 0) c.trip!.flushes++
  }
  wrap(socket, "_write", (write) =>
    function(chunk, ...rest) {
      leaving([chunk])
      return write.call(this, chunk, ...rest)
    })
  wrap(socket, "_writev", (writev) =>
    function(chunks, ...rest) {
      leaving((chunks as ReadonlyArray<{ readonly chunk: unknown }>).map((c) => c.chunk))
      return writev.call(this, chunks, ...rest)
    })
  // Ahead of the driver's own listener, whose callbacks may write the next statements at once.
  socket.prependListener("data", () => {
    c.answered = true
  })
  return socket
}

/** The service's pool on the test database, each of its connections on a watched socket. */
const watching = Layer.scopedContext(Effect.gen(function*() {
  const client = yield* PgConnection.make({ url: yield* PgTest.url, maxConnections: 5, stream: watched })
  return Context.make(SqlClient.SqlClient, client).pipe(
    Context.add(PgClient.PgClient, client),
    Context.add(PgTest.PgTestDatabase, yield* PgTest.PgTestDatabase)
  )
})).pipe(Layer.provide(Layer.merge(PgTest.layer, Reactivity.layer)))

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
