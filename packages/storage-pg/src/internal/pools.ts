/**
 * Which node-postgres pool stands behind a `PgClient` made by `PgConnection`, so the adapter's
 * statements can run on it directly, through node-postgres's public API (see `statements.ts`). A
 * client made elsewhere has none, and its statements run through `@effect/sql` as usual.
 */
import type pg from "pg"

/** A pool made by `PgConnection`, and whether its connections prepare parameterised statements. */
export interface Registered {
  readonly pool: pg.Pool
  readonly prepare: boolean
  /** Plain (not pipelined) connections to the same database, for `COPY` (history imports). */
  readonly copying?: pg.Pool
}

const pools = new WeakMap<object, Registered>()

export const register = (client: object, registered: Registered): void => {
  pools.set(client, registered)
}

export const poolOf = (client: object): Registered | undefined => pools.get(client)
