/**
 * How the migrated schema is distributed on a Citus cluster (docs/scaling.md#citus-by-project):
 * tenancy and configuration as reference tables, the per-action tables by `project_id` in one
 * co-location group, and the two tables keyed otherwise in groups of their own.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { defaultPrefix } from "./Migrations.js"

/** Small, read on every request, written rarely: a copy on every node. */
export const referenceTables = [
  "workspaces",
  "projects",
  "programs",
  "subscriptions",
  "experiments",
  "api_keys",
  "oauth_grants",
  "oauth_clients",
  "oauth_codes",
  "oauth_tokens",
  "users",
  "sessions",
  "invites",
  "audit_log"
] as const

/**
 * Distributed by `project_id` and co-located with the first: an action's transaction (its streak
 * row, day, achievements, log record, idempotency key, outbox messages) stays on one shard.
 */
export const projectTables = [
  "streaks",
  "activity_days",
  "achievements",
  "members",
  "aliases",
  "actions",
  "idempotency_keys",
  "outbox",
  "imports",
  "import_identities",
  "import_members",
  "action_counts",
  "active_spans",
  "streak_summaries",
  "experiment_zones",
  "experiment_members"
] as const

/**
 * Distributed by another column, each in a co-location group of its own: usage marks by workspace
 * (metering counts a workspace's members), delivery attempts by message id (the delivery port
 * addresses them by message alone).
 */
export const otherTables = [["usage", "workspace_id"], ["delivery_attempts", "message_id"]] as const

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The Citus calls for the schema under `prefix`, in order (reference tables first). */
export const statements = (prefix: string = defaultPrefix): ReadonlyArray<string> => [
  ...referenceTables.map((t) => `SELECT create_reference_table(${literal(`${prefix}${t}`)})`),
  ...projectTables.map((t, i) =>
    i === 0
      ? `SELECT create_distributed_table(${literal(`${prefix}${t}`)}, 'project_id')`
      : `SELECT create_distributed_table(${literal(`${prefix}${t}`)}, 'project_id', colocate_with => ${
        literal(`${prefix}${projectTables[0]}`)
      })`
  ),
  ...otherTables.map(([t, column]) =>
    `SELECT create_distributed_table(${literal(`${prefix}${t}`)}, ${literal(column)}, colocate_with => 'none')`
  ),
  // The claims name one project per statement there (docs/scaling.md#the-two-claims-on-citus):
  // their partial indexes lead with it, so each claim reads only its project's due entries (the
  // streak rows' in the order the claims resume in, as on one Postgres).
  `CREATE INDEX IF NOT EXISTS ${prefix}streaks_due_by_project ON ${prefix}streaks (project_id, due_at, program_id, user_hash, ledger) WHERE due_at IS NOT NULL`,
  `DROP INDEX IF EXISTS ${prefix}streaks_due`,
  `CREATE INDEX IF NOT EXISTS ${prefix}outbox_due_by_project ON ${prefix}outbox (project_id, next_attempt_at) WHERE status = 'pending'`,
  `DROP INDEX IF EXISTS ${prefix}outbox_due`
]

/**
 * Runs `statements(prefix)` on a Citus coordinator, skipping the tables Citus already knows (the
 * index changes are idempotent), so a second run does nothing. Each call moves a table's existing rows into its shards: run it after
 * the migrations and before traffic.
 */
export const run = (prefix: string = defaultPrefix): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const known = new Set(
      (yield* sql.unsafe<{ readonly name: string }>("SELECT logicalrelid::text AS name FROM pg_dist_partition"))
        .map((r) => r.name)
    )
    for (const statement of statements(prefix)) {
      const table = /^SELECT create_\w+_table\('([a-z0-9_]+)'/.exec(statement)?.[1]
      if (table === undefined || !known.has(table)) yield* sql.unsafe(statement)
    }
  })
