/**
 * The SQLite schema of every storage port, as `@effect/sql` migrations. The shape follows the
 * entities of `@streaks/core/Domain`; the types follow what SQLite stores well:
 *
 * - instants are INTEGER milliseconds since the epoch (exact, and they sort),
 * - calendar dates (`LocalDate`) are TEXT `YYYY-MM-DD` (they sort as text, and no zone sneaks in),
 * - booleans are INTEGER 0/1, lists and nested objects are JSON TEXT.
 *
 * better-sqlite3 prepares one statement at a time, so a migration is a list of statements.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

const initial: ReadonlyArray<string> = [
  `CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    plan TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`,
  `CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    site_key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    allowed_origins TEXT NOT NULL,
    timezone TEXT NOT NULL,
    browser_counting TEXT NOT NULL,
    legacy_no_origin_ingest INTEGER NOT NULL,
    server_token_hash TEXT NOT NULL,
    signing_secret_sealed TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`,
  `CREATE INDEX projects_workspace ON projects (workspace_id)`,
  `CREATE TABLE programs (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    name TEXT NOT NULL,
    event_key TEXT NOT NULL,
    status TEXT NOT NULL,
    mode TEXT NOT NULL,
    webhook_secret_hash TEXT NOT NULL,
    milestones TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`,
  // Not unique on purpose: the port rejects nothing, the services keep event keys unique.
  `CREATE INDEX programs_event_key ON programs (project_id, event_key)`,
  `CREATE TABLE members (
    project_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    timezone TEXT,
    PRIMARY KEY (project_id, user_hash)
  )`,
  `CREATE TABLE aliases (
    project_id TEXT NOT NULL,
    anonymous_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    PRIMARY KEY (project_id, anonymous_id)
  )`,
  `CREATE TABLE streaks (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    ledger TEXT NOT NULL,
    last_active_day TEXT,
    run INTEGER NOT NULL,
    best INTEGER NOT NULL,
    timezone TEXT NOT NULL,
    at_risk_notified_for TEXT,
    broken_notified_after TEXT,
    due_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, program_id, user_hash, ledger)
  )`,
  // claimDue reads only due rows: its cost follows the due rows, not the table (a port MUST).
  `CREATE INDEX streaks_due ON streaks (due_at) WHERE due_at IS NOT NULL`,
  `CREATE INDEX streaks_member ON streaks (project_id, user_hash)`,
  `CREATE INDEX streaks_program ON streaks (program_id, ledger)`,
  `CREATE TABLE activity_days (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    ledger TEXT NOT NULL,
    day TEXT NOT NULL,
    PRIMARY KEY (project_id, program_id, user_hash, ledger, day)
  )`,
  `CREATE INDEX activity_days_member ON activity_days (project_id, user_hash)`,
  `CREATE TABLE achievements (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    ledger TEXT NOT NULL,
    milestone_id TEXT NOT NULL,
    achieved_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, program_id, user_hash, ledger, milestone_id)
  )`,
  `CREATE TABLE actions (
    id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    program_id TEXT,
    user_hash TEXT NOT NULL,
    event TEXT NOT NULL,
    event_type TEXT NOT NULL,
    door TEXT NOT NULL,
    ledger TEXT NOT NULL,
    ts INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    local_date TEXT NOT NULL,
    timezone TEXT NOT NULL,
    counted INTEGER NOT NULL,
    source TEXT,
    external_service TEXT,
    integration_id TEXT,
    session_id TEXT,
    idempotency_key TEXT,
    extra TEXT
  )`,
  `CREATE INDEX actions_program_ts ON actions (program_id, ledger, ts)`,
  `CREATE TABLE idempotency_keys (
    project_id TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    claimed_at INTEGER NOT NULL,
    completed_at INTEGER,
    response_status INTEGER,
    response_body TEXT,
    PRIMARY KEY (project_id, key)
  )`,
  `CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`,
  `CREATE TABLE subscriptions (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    secret_sealed TEXT NOT NULL,
    created_by_type TEXT NOT NULL,
    created_by_id TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`,
  `CREATE INDEX subscriptions_program ON subscriptions (program_id)`,
  `CREATE INDEX subscriptions_created_by ON subscriptions (created_by_type, created_by_id)`,
  `CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    delivered_at INTEGER
  )`,
  `CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending'`,
  `CREATE INDEX outbox_delivered ON outbox (program_id, type, created_at) WHERE status = 'delivered'`,
  `CREATE TABLE delivery_attempts (
    message_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    at INTEGER NOT NULL,
    status INTEGER,
    latency_ms REAL NOT NULL,
    error TEXT,
    PRIMARY KEY (message_id, attempt)
  )`,
  `CREATE INDEX delivery_attempts_at ON delivery_attempts (at)`,
  `CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  )`,
  `CREATE INDEX api_keys_token_hash ON api_keys (token_hash)`,
  `CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    workspace_ids TEXT NOT NULL,
    app_name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  )`,
  `CREATE INDEX oauth_grants_token_hash ON oauth_grants (token_hash)`,
  `CREATE TABLE usage (
    workspace_id TEXT NOT NULL,
    month TEXT NOT NULL,
    member TEXT NOT NULL,
    PRIMARY KEY (workspace_id, month, member)
  )`,
  `CREATE TABLE experiments (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    holdout_percent INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER
  )`,
  // At most one running experiment per program: a uniqueness rule of Catalog.insert.
  `CREATE UNIQUE INDEX experiments_running ON experiments (program_id) WHERE ended_at IS NULL`
]

// Streak policies (docs/streak-semantics.md#streak-policies): a program's policy (JSON TEXT), and
// on each streak row its state under that policy. NULL means the field is absent, which core reads
// as its default, so rows written before stay valid. `mode` has no CHECK here, so it takes "weekly"
// and "monthly" as is.
const streakPolicies: ReadonlyArray<string> = [
  `ALTER TABLE programs ADD COLUMN policy TEXT`,
  `ALTER TABLE streaks ADD COLUMN period_days INTEGER`,
  `ALTER TABLE streaks ADD COLUMN freezes INTEGER`,
  `ALTER TABLE streaks ADD COLUMN grants TEXT`,
  `ALTER TABLE streaks ADD COLUMN frozen_notified_through TEXT`
]

// A program's running experiment is unique within its project, as on Postgres, where every unique
// index of a tenant table starts with project_id (docs/scaling.md#the-layout-rules).
const runningExperimentPerProject: ReadonlyArray<string> = [
  `DROP INDEX experiments_running`,
  `CREATE UNIQUE INDEX experiments_running ON experiments (project_id, program_id) WHERE ended_at IS NULL`
]

// The authorization server (docs/oauth.md in the repository): clients, codes and the tokens of
// consented grants, which name their client and user.
const oauthAuthorizationServer: ReadonlyArray<string> = [
  `ALTER TABLE oauth_grants ADD COLUMN client_id TEXT`,
  `ALTER TABLE oauth_grants ADD COLUMN user_id TEXT`,
  `CREATE INDEX oauth_grants_client ON oauth_grants (client_id)`,
  `CREATE INDEX oauth_grants_user ON oauth_grants (user_id)`,
  `CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    secret_hash TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  )`,
  `CREATE TABLE oauth_codes (
    id TEXT PRIMARY KEY,
    code_hash TEXT NOT NULL,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    workspace_ids TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER,
    grant_id TEXT
  )`,
  `CREATE INDEX oauth_codes_code_hash ON oauth_codes (code_hash)`,
  `CREATE TABLE oauth_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    grant_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER,
    revoked_at INTEGER
  )`,
  `CREATE INDEX oauth_tokens_token_hash ON oauth_tokens (token_hash)`,
  `CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)`
]

// Users with their workspace roles, sign-in sessions, invites and the audit log
// (docs/accounts.md): only hashes of tokens and the argon2id string of a password are stored.
const accountsAndAudit: ReadonlyArray<string> = [
  `CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    memberships TEXT NOT NULL,
    password_hash TEXT,
    failed_sign_ins TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`,
  `CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  )`,
  `CREATE INDEX sessions_user ON sessions (user_id)`,
  `CREATE TABLE invites (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
  )`,
  `CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    workspace_id TEXT,
    actor_kind TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    client_address TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    details TEXT NOT NULL
  )`,
  `CREATE INDEX audit_log_workspace_at ON audit_log (workspace_id, at, id)`,
  `CREATE INDEX audit_log_at ON audit_log (at, id)`,
  // A subscription's deliveries log reads its newest messages.
  `CREATE INDEX outbox_subscription ON outbox (subscription_id, created_at)`
]

// Forgiveness (docs/streak-semantics.md#forgiveness): a program's outage windows, a streak row's
// repairs and pauses (JSON TEXT, NULL for none), inputs of the streak calculus.
const forgiveness: ReadonlyArray<string> = [
  `ALTER TABLE programs ADD COLUMN outages TEXT`,
  `ALTER TABLE streaks ADD COLUMN repairs TEXT`,
  `ALTER TABLE streaks ADD COLUMN pauses TEXT`
]

const statements = (list: ReadonlyArray<string>): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(list, (text) => sql.unsafe(text), { discard: true }))

// History imports (docs/operations.md#bringing-your-history): jobs with their progress, the
// identity of every imported line, and the members each job touched.
const historyImports: ReadonlyArray<string> = [
  `CREATE TABLE imports (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    received INTEGER NOT NULL,
    imported INTEGER NOT NULL,
    duplicates INTEGER NOT NULL,
    rejected TEXT NOT NULL,
    committed_line INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER
  )`,
  `CREATE INDEX imports_resumable ON imports (program_id, source, status)`,
  `CREATE TABLE import_identities (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    identity TEXT NOT NULL,
    PRIMARY KEY (project_id, program_id, identity)
  )`,
  `CREATE TABLE import_members (
    import_id TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    PRIMARY KEY (import_id, user_hash)
  )`
]

// A program's outage windows change by compare-and-set on this counter
// (`DirectoryStore.changeProgramOutages`), so that windows declared at the same time all stay.
const outageRevisions: ReadonlyArray<string> = [`ALTER TABLE programs ADD COLUMN outages_revision INTEGER`]

// The report rollups (docs/decisions/0024-report-rollups.md, internal/rollups.ts), filled from
// what is stored. A missing source label is JSON null in \`labels\`: one exact key.
const reportRollups: ReadonlyArray<string> = [
  `CREATE TABLE action_counts (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    ledger TEXT NOT NULL,
    day TEXT NOT NULL,
    local_date TEXT NOT NULL,
    event_type TEXT NOT NULL,
    labels TEXT NOT NULL,
    count INTEGER NOT NULL,
    counted INTEGER NOT NULL,
    PRIMARY KEY (project_id, program_id, ledger, day, local_date, event_type, labels)
  )`,
  `INSERT INTO action_counts
    SELECT project_id, program_id, ledger, date(ts / 1000, 'unixepoch'), local_date, event_type,
      json_array(source, external_service, integration_id), count(*), sum(counted)
    FROM actions WHERE program_id IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6, 7`,
  `CREATE INDEX action_counts_program ON action_counts (program_id, ledger, day)`,
  `CREATE TABLE active_spans (
    project_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    ledger TEXT NOT NULL,
    day TEXT NOT NULL,
    prev TEXT NOT NULL,
    members INTEGER NOT NULL,
    PRIMARY KEY (project_id, program_id, ledger, day, prev)
  )`,
  `INSERT INTO active_spans
    SELECT project_id, program_id, ledger, day, prev, count(*) FROM (
      SELECT project_id, program_id, ledger, day,
        coalesce(lag(day) OVER (PARTITION BY project_id, program_id, user_hash, ledger ORDER BY day), '') AS prev
      FROM activity_days
    ) GROUP BY 1, 2, 3, 4, 5`,
  `CREATE INDEX active_spans_program ON active_spans (program_id, ledger, day)`
]

// An import's owner renews its heartbeat; `loaded`: every line read (docs/operations.md#when-the-process-doing-an-import-dies).
const importLeases: ReadonlyArray<string> = [
  `ALTER TABLE imports ADD COLUMN heartbeat_at INTEGER`,
  `UPDATE imports SET heartbeat_at = coalesce(finished_at, started_at)`,
  `ALTER TABLE imports ADD COLUMN loaded INTEGER NOT NULL DEFAULT 0`
]

/** The migrations, keyed `<id>_<name>` as `Migrator.fromRecord` expects. Add new ones, never edit old ones. */
export const migrations = {
  "0001_initial": statements(initial),
  "0002_streak_policies": statements(streakPolicies),
  "0003_running_experiment_per_project": statements(runningExperimentPerProject),
  "0004_accounts_and_audit": statements(accountsAndAudit),
  "0005_oauth_authorization_server": statements(oauthAuthorizationServer),
  "0006_forgiveness": statements(forgiveness),
  "0007_history_imports": statements(historyImports),
  "0008_outage_revisions": statements(outageRevisions),
  "0009_report_rollups": statements(reportRollups),
  "0010_import_leases": statements(importLeases)
}

// The plain migrator: `SqliteMigrator.run` would also want FileSystem, Path and a CommandExecutor
// for its optional schema dump, which this adapter does not use.
const migrator = Migrator.make({})

/** Applies every pending migration (in one transaction) and returns those it applied. */
export const run = migrator({ loader: Migrator.fromRecord(migrations), table: "streaks_migrations" })
