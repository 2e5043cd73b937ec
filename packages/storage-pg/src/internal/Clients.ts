/**
 * The node-postgres clients of the service's pool: both send array parameters as literals built
 * in one pass (`ArrayLiteral`) and the statements issued in one tick in one write (`sendTogether`);
 * `PreparingClient` also turns each parameterised statement into a named prepared statement of its
 * connection, so Postgres parses and plans a hot statement once per connection, not per call.
 */
import pg from "pg"
import * as ArrayLiteral from "./ArrayLiteral.js"

/**
 * Statement texts that get a name, process-wide. Our SQL is a fixed set of templates (multi-row
 * statements pass arrays, not variable `VALUES` lists), so the cap is never reached in practice;
 * it bounds the memory a connection and its backend keep if some caller builds texts dynamically:
 * past it, new texts run unnamed, as before.
 */
const MAX_NAMED = 1000
const names = new Map<string, string>()

const nameOf = (text: string): string | undefined => {
  const known = names.get(text)
  if (known !== undefined || names.size >= MAX_NAMED) return known
  const name = `streaks_${names.size}`
  names.set(text, name)
  return name
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown

const query: Query = pg.Client.prototype.query as Query

type Stream = { readonly cork?: () => void; readonly uncork?: () => void }

/** Clients whose writes are held until the end of the current tick. */
const corked = new WeakSet<pg.Client>()

/**
 * Holds the connection's writes until the end of the current tick. node-postgres writes every
 * statement on its own (one system call each, corked only around its own messages), and on a
 * pipelined connection each of those writes wakes the backend again: a batch's side-by-side
 * statements (`BEGIN` with the first, the locks with the days and achievements, the writes)
 * cost one wake-up per statement. Corked here, whatever is issued before the tick ends leaves in
 * one write, still in order; the uncork always runs, on the next tick.
 */
const sendTogether = (client: pg.Client): void => {
  if (corked.has(client)) return
  const stream = (client as unknown as { readonly connection?: { readonly stream?: Stream } }).connection?.stream
  if (stream?.cork === undefined || stream.uncork === undefined) return
  corked.add(client)
  stream.cork()
  process.nextTick(() => {
    corked.delete(client)
    stream.uncork!()
  })
}

/** For `new pg.Pool({ Client })` when statements must not be prepared (see `PgConnection.PoolOptions.prepare`). */
export class LeanClient extends pg.Client {}

;(LeanClient.prototype as unknown as { query: Query }).query = function(this: pg.Client, config, values, callback) {
  sendTogether(this)
  return query.call(this, config, Array.isArray(values) ? ArrayLiteral.params(values) : values, callback)
}

/**
 * For `new pg.Pool({ Client })`. Only `query(text, values[, callback])` with at least one value is
 * named (that is how `@effect/sql-pg` runs statements); statements without values keep the simple
 * protocol, which migrations need for several statements in one text. Everything else goes the
 * `LeanClient` way.
 */
export class PreparingClient extends LeanClient {}

const lean: Query = LeanClient.prototype.query as Query
;(PreparingClient.prototype as unknown as { query: Query }).query = function(
  this: pg.Client,
  config,
  values,
  callback
) {
  const name = typeof config === "string" && Array.isArray(values) && values.length > 0 ? nameOf(config) : undefined
  if (name === undefined) return lean.call(this, config, values, callback)
  sendTogether(this)
  const params = ArrayLiteral.params(values as ReadonlyArray<unknown>)
  if (typeof callback !== "function") return query.call(this, { name, text: config, values: params })
  // With a callback (how statements run), a `Query` built from the text and named afterwards: a
  // config object is copied property by property, descriptors and all, on every call (a cost the
  // profile of ingest shows); a `Query` is taken as it is.
  const named = new pg.Query(config as string, params as Array<unknown>, callback as never)
  ;(named as unknown as { name: string }).name = name
  return query.call(this, named)
}
