/**
 * Shared plumbing of the Postgres adapter: table names under the configured prefix, the mapping
 * of every `SqlError` to core's `StorageError`, and the small value conversions that node-postgres
 * needs (dates, JSON, optional columns).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import type { Fragment } from "@effect/sql/Statement"
import type { LocalDate } from "@streaks/core/Calendar"
import { StorageError } from "@streaks/core/Errors"
import { Effect, Option } from "effect"
import type * as Pools from "./pools.js"
import * as Statements from "./statements.js"

/** The table names of the schema, without prefix. */
export const tableNames = [
  "workspaces",
  "projects",
  "programs",
  "members",
  "aliases",
  "streaks",
  "activity_days",
  "achievements",
  "actions",
  "action_counts",
  "active_spans",
  "streak_summaries",
  "experiment_zones",
  "experiment_members",
  "idempotency_keys",
  "subscriptions",
  "outbox",
  "delivery_attempts",
  "api_keys",
  "oauth_grants",
  "oauth_clients",
  "oauth_codes",
  "oauth_tokens",
  "usage",
  "experiments",
  "users",
  "sessions",
  "invites",
  "audit_log",
  "imports",
  "import_identities",
  "import_members"
] as const
export type TableName = (typeof tableNames)[number]

/**
 * Prefixes are spliced into SQL as identifiers, so only plain lower-case names are accepted
 * (lower case also keeps `'name'::regclass` lookups of the migrator exact).
 */
export const isValidPrefix = (prefix: string): boolean => /^[a-z_][a-z0-9_]{0,39}$/.test(prefix)

/** Every table as a ready-to-splice SQL fragment (`"streaks_projects"`). */
export type Tables = { readonly [K in TableName]: Fragment }

export const makeTables = (sql: SqlClient.SqlClient, prefix: string): Tables =>
  Object.fromEntries(tableNames.map((name) => [name, sql.literal(`"${prefix}${name}"`)])) as unknown as Tables

/** What every port implementation closes over. */
export interface Ctx {
  readonly sql: SqlClient.SqlClient
  readonly t: Tables
  /** The tables' prefix: names what is the schema's own beyond its tables (advisory lock spaces). */
  readonly prefix: string
  /** Runs a per-request statement the lean way (see `makeQuery`). */
  readonly query: Query
}

type Row = Record<string, unknown>

export type Query = (statement: Statement.Statement<Row>) => Effect.Effect<ReadonlyArray<Row>, SqlError>

/**
 * Runs a statement on the transaction's connection inside `withTransaction`, else straight on the
 * pool behind the client (when `PgConnection` made it), skipping what running a `sql\`…\``
 * statement costs on every call besides the query (a span, a scope and a connection acquirer),
 * about as much as node-postgres itself (docs/decisions/0005-batch-statements-on-postgres.md).
 * On such a pool, and in the transactions the adapter runs on it (`transactor.ts`), statements
 * are prepared (`statements.ts`). Rows and failures are the same; a client made elsewhere runs
 * the statement as usual.
 */
export const makeQuery = (registered: Pools.Registered | undefined): Query => (statement) =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (tx) => {
    if (Option.isSome(tx)) {
      const [text, params] = statement.compile()
      const connection = tx.value[0]
      return connection instanceof Statements.PooledConnection
        ? Statements.rows(connection.client, text, params, connection.prepare)
        : connection.execute(text, params, undefined)
    }
    if (registered === undefined) return statement
    const [text, params] = statement.compile()
    return Statements.rows(registered.pool, text, params, registered.prepare)
  })

const describe = (error: SqlError): string => {
  const cause = error.cause as { readonly message?: unknown; readonly code?: unknown } | undefined
  const detail = typeof cause?.message === "string" ? cause.message : String(error.message ?? "")
  return typeof cause?.code === "string" ? `${detail} (${cause.code})` : detail
}

/** A StorageError naming the port operation; the driver error stays as the cause for logs. */
export const storageError = (op: string, error: SqlError): StorageError =>
  new StorageError({ message: `${op}: ${describe(error)}`, cause: error })

/** Maps the `SqlError` of one port operation to `StorageError`, so no driver type leaks out. */
export const io = (op: string) => <A, R>(self: Effect.Effect<A, SqlError, R>): Effect.Effect<A, StorageError, R> =>
  Effect.mapError(self, (e) => storageError(op, e))

/** timestamptz arrives as a Date unless a custom type parser turned it into text. */
export const toDate = (value: unknown): Date => (value instanceof Date ? value : new Date(String(value)))

export const toOptionalDate = (value: unknown): Date | undefined =>
  value === null || value === undefined ? undefined : toDate(value)

/**
 * `date` columns are always selected as text (`to_char(day, 'YYYY-MM-DD')`, independent of the
 * session's DateStyle): node-postgres would parse them into a JS Date at local midnight.
 */
export const toLocalDate = (value: unknown): LocalDate => String(value) as LocalDate

export const toOptionalLocalDate = (value: unknown): LocalDate | undefined =>
  value === null || value === undefined ? undefined : toLocalDate(value)

export const toOptionalString = (value: unknown): string | undefined =>
  value === null || value === undefined ? undefined : String(value)

/** Each key's last item, in first-seen order: an upsert may not touch one row twice. */
export const lastPerKey = <A>(
  items: ReadonlyArray<A>,
  keyOf: (item: A) => string
): Array<A> => [...new Map(items.map((item) => [keyOf(item), item])).values()]

/** JSON parameters are sent as text and cast (`::jsonb`), because node-postgres turns JS arrays into PG arrays. */
export const jsonParam = (value: unknown): string | null => {
  const text = JSON.stringify(value)
  return text === undefined ? null : text
}

/**
 * `{ [key]: value }` when the column holds a value, `{}` for NULL: spread into a constructor
 * argument so that an optional field is absent, as `exactOptionalPropertyTypes` wants.
 */
export const opt = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V }

/** Schema classes are built from trusted rows without re-validation (checks live in the schema). */
export const trusted = true as const
