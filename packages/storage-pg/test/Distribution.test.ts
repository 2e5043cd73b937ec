/**
 * Distributability of the schema, read from the Postgres catalog of the migrated database: the
 * layout rules that let tenant tables be distributed by `project_id` (docs/scaling.md#the-layout-rules).
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Migrations from "../src/Migrations.js"
import * as PgTest from "../src/PgTest.js"

const prefix = "dist_"

/**
 * Tables without `project_id` that still hold per-tenant rows, each with the reason it is kept
 * apart (docs/scaling.md#citus-by-project): delivery attempts are addressed by message id alone.
 */
const notByProject: ReadonlyArray<string> = [`${prefix}delivery_attempts`]

/** Columns that hold ids: compared as opaque bytes wherever they appear. */
const isIdColumn = (name: string) =>
  name === "id" || name.endsWith("_id") || name === "user_hash" || name === "member" || name === "key"

interface Column {
  readonly table: string
  readonly column: string
  readonly collation: string | null
}

interface Index {
  readonly table: string
  readonly index: string
  readonly first: string
  readonly primary: boolean
}

interface ForeignKey {
  readonly table: string
  readonly constraint: string
  readonly columns: ReadonlyArray<string>
  readonly target: string
  readonly targetColumns: ReadonlyArray<string>
}

const catalog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const like = `${prefix}%`
  const columns = yield* sql<Column>`
    SELECT c.relname AS table, a.attname AS column, co.collname AS collation
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE c.relname LIKE ${like} AND c.relname <> ${`${prefix}migrations`} AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY 1, 2`
  const indexes = yield* sql<Index>`
    SELECT c.relname AS table, i.relname AS index, a.attname AS first, x.indisprimary AS primary
    FROM pg_index x
    JOIN pg_class c ON c.oid = x.indrelid
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
    WHERE x.indisunique AND c.relname LIKE ${like} AND c.relname <> ${`${prefix}migrations`}
    ORDER BY 1, 2`
  const foreignKeys = yield* sql<ForeignKey>`
    SELECT c.relname AS table, k.conname AS constraint, t.relname AS target,
      ARRAY(SELECT attname FROM pg_attribute WHERE attrelid = k.conrelid AND attnum = ANY(k.conkey) ORDER BY attnum) AS columns,
      ARRAY(SELECT attname FROM pg_attribute WHERE attrelid = k.confrelid AND attnum = ANY(k.confkey) ORDER BY attnum) AS target_columns
    FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_class t ON t.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    WHERE k.contype = 'f' AND c.relname LIKE ${like}
    ORDER BY 1, 2`
  const tenant = new Set(columns.filter((c) => c.column === "project_id").map((c) => c.table))
  return { columns, indexes, foreignKeys, tenant }
})

layer(PgTest.layer, { timeout: "120 seconds" })("Distribution", (it) => {
  it.effect("every table that holds members' rows carries project_id, except the documented ones", () =>
    Effect.gen(function*() {
      yield* Migrations.run({ prefix })
      const { columns, tenant } = yield* catalog
      // A member's rows (streaks, days, milestones, actions, aliases) must be reachable by project.
      const perMember = [...new Set(columns.filter((c) => c.column === "user_hash").map((c) => c.table))]
      assert.isAbove(perMember.length, 4)
      assert.deepStrictEqual(perMember.filter((t) => !tenant.has(t)), [])
      // Every table the pipeline writes per action or per delivery is a tenant table.
      for (const table of ["streaks", "activity_days", "achievements", "actions", "outbox", "idempotency_keys"]) {
        assert.isTrue(tenant.has(`${prefix}${table}`), table)
      }
      // The exceptions exist, and are exceptions (no project_id).
      for (const table of notByProject) {
        assert.isTrue(columns.some((c) => c.table === table), table)
        assert.isFalse(tenant.has(table), table)
      }
    }))

  it.effect("every primary key and unique index of a tenant table starts with project_id", () =>
    Effect.gen(function*() {
      const { indexes, tenant } = yield* catalog
      const ofTenants = indexes.filter((i) => tenant.has(i.table))
      // Sanity: the catalog query sees the keys (one primary key per keyed tenant table at least).
      assert.isAbove(ofTenants.filter((i) => i.primary).length, 8)
      assert.deepStrictEqual(ofTenants.filter((i) => i.first !== "project_id").map((i) => i.index), [])
    }))

  it.effect("every foreign key from or to a tenant table includes project_id", () =>
    Effect.gen(function*() {
      const { foreignKeys, tenant } = yield* catalog
      const involved = foreignKeys.filter((k) => tenant.has(k.table) || tenant.has(k.target))
      assert.isAbove(involved.length, 0)
      assert.deepStrictEqual(
        involved.filter((k) => !k.columns.includes("project_id")).map((k) => k.constraint),
        []
      )
    }))

  it.effect("project_id and every other id column compare bytes (COLLATE \"C\") in every table", () =>
    Effect.gen(function*() {
      const { columns } = yield* catalog
      const ids = columns.filter((c) => isIdColumn(c.column))
      assert.isAbove(ids.filter((c) => c.column === "project_id").length, 10)
      // One collation per id column across tables: co-located tables must agree on the
      // distribution column's collation, and a join on ids must not mix collations.
      assert.deepStrictEqual(ids.filter((c) => c.collation !== "C"), [])
    }))
})
