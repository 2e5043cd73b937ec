/**
 * Statements on node-postgres through its public API, for the pools `PgConnection` makes: where
 * the pool prepares, each parameterised text runs as a named statement (`{ name, text, values }`),
 * so Postgres parses and plans a hot statement once per connection rather than at every call; array
 * parameters travel as literals built in one pass (`arrayLiteral.ts`). `PooledConnection` is one
 * pooled client as an `@effect/sql` `Connection`, for the transactions the adapter runs itself.
 */
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Stream } from "effect"
import type pg from "pg"
import * as ArrayLiteral from "./arrayLiteral.js"

/**
 * Statement texts that get a name, process-wide. Our SQL is a fixed set of templates (multi-row
 * statements pass arrays, not variable `VALUES` lists), so the cap is never reached in practice;
 * it bounds the memory a connection and its backend keep if some caller builds texts dynamically:
 * past it, new texts run unnamed.
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

type Row = Record<string, unknown>

/** A pool or one of its clients: both run a statement from a query config, answering through a callback. */
type Target = {
  readonly query: (
    config: pg.QueryConfig | pg.QueryArrayConfig,
    callback: (cause: Error | undefined | null, result: pg.QueryResult<any> | Array<pg.QueryResult<any>>) => void
  ) => void
}

/**
 * One statement; its result (one per statement of a text without values that holds several), or
 * its failure as `SqlError`. Only a statement with values is named: one without keeps the simple
 * protocol, which migrations need for several statements in one text.
 */
export const run = (
  target: pg.Pool | pg.PoolClient,
  text: string,
  params: ReadonlyArray<unknown>,
  prepare: boolean,
  rowMode?: "array"
): Effect.Effect<pg.QueryResult<any> | Array<pg.QueryResult<any>>, SqlError> =>
  Effect.async((resume) => {
    const values = params.length === 0 ? undefined : ArrayLiteral.params(params) as Array<unknown>
    const name = prepare && values !== undefined ? nameOf(text) : undefined
    const config: { text: string; values?: Array<unknown>; name?: string; rowMode?: "array" } = { text }
    if (values !== undefined) config.values = values
    if (name !== undefined) config.name = name
    if (rowMode !== undefined) config.rowMode = rowMode
    ;(target as unknown as Target).query(config as pg.QueryConfig, (cause, result) =>
      resume(
        cause === undefined || cause === null
          ? Effect.succeed(result)
          : Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
      ))
  })

/** The rows of `run`'s result: an array of them per statement for a text of several. */
const rowsOf = (result: pg.QueryResult<any> | Array<pg.QueryResult<any>>): ReadonlyArray<any> =>
  Array.isArray(result) ? result.map((r) => r.rows ?? []) : result.rows ?? []

/** `run`'s rows. */
export const rows = (
  target: pg.Pool | pg.PoolClient,
  text: string,
  params: ReadonlyArray<unknown>,
  prepare: boolean
): Effect.Effect<ReadonlyArray<Row>, SqlError> => Effect.map(run(target, text, params, prepare), rowsOf)

/**
 * A client reserved from the pool, as the connection of a transaction (`transactor.ts`): the
 * statements of `@effect/sql` made inside the transaction run on it, prepared like the adapter's
 * own. Pipelined connections cannot keep a cursor open, so a stream reads all rows at once.
 */
export class PooledConnection implements Connection {
  constructor(readonly client: pg.PoolClient, readonly prepare: boolean) {}

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const all = rows(this.client, sql, params, this.prepare)
    return transformRows === undefined ? all : Effect.map(all, (r) => transformRows(r as Array<object>))
  }

  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return run(this.client, sql, params, this.prepare)
  }

  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return Stream.fromIterableEffect(this.execute(sql, params, transformRows))
  }

  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.map(
      run(this.client, sql, params, this.prepare, "array"),
      (result) => rowsOf(result) as ReadonlyArray<ReadonlyArray<unknown>>
    )
  }

  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const all = rows(this.client, sql, params, false)
    return transformRows === undefined ? all : Effect.map(all, (r) => transformRows(r as Array<object>))
  }
}
