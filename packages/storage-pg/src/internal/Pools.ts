/**
 * Which node-postgres pool stands behind a `PgClient` made by `PgConnection`, so the adapter's
 * per-request statements can run on it directly (see `Sql.makeQuery`). A client made elsewhere has
 * none, and its statements run through `@effect/sql` as usual.
 */
import type pg from "pg"

const pools = new WeakMap<object, pg.Pool>()

export const register = (client: object, pool: pg.Pool): void => {
  pools.set(client, pool)
}

export const poolOf = (client: object): pg.Pool | undefined => pools.get(client)
