/**
 * The pool's sockets (`internal/socket.ts`) send what is issued in one tick in one write, in
 * order: a batch's side-by-side statements wake the backend once, not once per statement.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import pg from "pg"
import * as Socket from "../src/internal/socket.js"
import * as PgTest from "../src/PgTest.js"

type Writable = { _write: (...a: Array<unknown>) => unknown; _writev?: (...a: Array<unknown>) => unknown }

/** A pipelined client on the adapter's socket, as `PgConnection` makes them, and a count of the socket's writes. */
const connected = Effect.acquireRelease(
  Effect.flatMap(PgTest.url, (url) =>
    Effect.promise(async () => {
      const writes = { count: 0 }
      const stream = () => {
        const socket = Socket.make() as unknown as Writable
        for (const method of ["_write", "_writev"] as const) {
          const original = socket[method]?.bind(socket)
          if (original === undefined) continue
          socket[method] = (...args) => {
            writes.count++
            return original(...args)
          }
        }
        return socket as unknown as ReturnType<typeof Socket.make>
      }
      const client = new pg.Client({ connectionString: Redacted.value(url), stream, ...({ pipeline: true } as {}) })
      await client.connect()
      return { client, writes }
    })),
  ({ client }) => Effect.promise(() => client.end())
)

/** A statement on the extended protocol (as the adapter's statements and its `BEGIN` are sent), or a simple query. */
const run = (client: pg.Client, text: string, values?: Array<unknown>, simple = false) =>
  new Promise<Array<Record<string, unknown>>>((ok, ko) => {
    const done = (error: Error | null, result: pg.QueryResult) => (error ? ko(error) : ok(result.rows))
    if (simple) client.query(text, done)
    else {client.query(
        { text, ...(values === undefined ? { queryMode: "extended" } : { values }) } as pg.QueryConfig,
        done
      )}
  })

layer(PgTest.layer, { timeout: "120 seconds" })("the pool's sockets", (it) => {
  it.scoped("statements issued in one tick leave in one write and run in the order issued", () =>
    Effect.gen(function*() {
      const { client, writes } = yield* connected
      yield* Effect.promise(() => run(client, "CREATE TEMP TABLE sent_together (n int)", undefined, true))
      const before = writes.count
      const answers = yield* Effect.promise(() =>
        Promise.all([
          run(client, "BEGIN"),
          run(client, "INSERT INTO sent_together SELECT * FROM unnest($1::int[])", [[1, 2]]),
          run(client, "INSERT INTO sent_together VALUES ($1)", [3]),
          run(client, "SELECT array_agg(n ORDER BY n) AS ns FROM sent_together WHERE n > $1", [0]),
          run(client, "COMMIT")
        ])
      )
      assert.strictEqual(writes.count - before, 1, "five statements, one write")
      assert.deepStrictEqual(answers[3], [{ ns: [1, 2, 3] }])
      // The next tick's statement is a write of its own, and so is a simple query.
      yield* Effect.promise(() => run(client, "SELECT $1::int AS v", [1]))
      assert.strictEqual(writes.count - before, 2)
      yield* Effect.promise(() => run(client, "SELECT 1", undefined, true))
      assert.strictEqual(writes.count - before, 3)
    }))

  it.scoped("a failing statement among them fails alone; the rest of the write still answers", () =>
    Effect.gen(function*() {
      const { client } = yield* connected
      const answers = yield* Effect.promise(() =>
        Promise.allSettled([
          run(client, "SELECT $1::int AS v", [1]),
          run(client, "SELECT 10 / $1::int AS q", [0]),
          run(client, "SELECT $1::int AS v", [3])
        ])
      )
      assert.deepStrictEqual(answers.map((a) => a.status), ["fulfilled", "rejected", "fulfilled"])
      assert.deepStrictEqual((answers[2] as PromiseFulfilledResult<unknown>).value, [{ v: 3 }])
    }))
})
