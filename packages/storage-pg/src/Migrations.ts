/**
 * The Postgres schema of every storage port, as ordered `Migrator.fromRecord` migrations under a
 * configurable table prefix (default `streaks_`). `run` is idempotent and safe when several
 * replicas start at once: the whole run holds a transaction-scoped advisory lock on one dedicated
 * connection, so exactly one replica migrates and the others then find nothing left to do.
 *
 * Layout rules (see ARCHITECTURE, storage-pg): every tenant table starts its primary key with
 * `project_id`, and no hot query joins across projects, so the schema can be distributed by
 * project (Citus) without a rewrite. Only hashes or sealed values of secrets are stored
 * (`*_hash`, `*_sealed`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgMigrator from "@effect/sql-pg/PgMigrator"
import { summariesChangeText } from "./internal/activeSpans.js"
import { fillText, stored } from "./internal/experimentMembers.js"
import { Effect, Layer } from "effect"
import { isValidPrefix } from "./internal/sql.js"

export interface Options {
  /** Prepended to every table name, the migrations table included. Default `"streaks_"`. */
  readonly prefix?: string | undefined
}

export const defaultPrefix = "streaks_"

/**
 * The advisory lock key every replica takes before migrating ("streaks" in ASCII). Advisory locks
 * are per database, so separate databases on one server never wait for each other.
 */
export const lockKey = 0x73747265616b73n

/** The migrations, keyed `<id>_<name>` as `Migrator.fromRecord` expects. */
export const migrations = (prefix: string): Record<string, Effect.Effect<void, SqlError, SqlClient.SqlClient>> => ({
  "0001_initial": ddl(initial(prefix)),
  "0002_cheaper_writes_per_action": ddl(cheaperWritesPerAction(prefix)),
  "0003_achieved_on_streak_rows": ddl(achievedOnStreakRows(prefix)),
  "0004_byte_order_keys": ddl(byteOrderKeys(prefix)),
  "0005_metered_month_on_streak_rows": ddl(meteredMonthOnStreakRows(prefix)),
  "0006_streak_policies": ddl(streakPolicies(prefix)),
  "0008_one_collation_for_ids": ddl(oneCollationForIds(prefix)),
  "0009_accounts_and_audit": ddl(accountsAndAudit(prefix)),
  "0010_oauth_authorization_server": ddl(oauthAuthorizationServer(prefix)),
  "0011_forgiveness": ddl(forgiveness(prefix)),
  "0012_history_imports": ddl(historyImports(prefix)),
  "0013_outage_revisions": ddl(outageRevisions(prefix)),
  "0014_report_rollups": ddl(reportRollups(prefix)),
  "0015_import_leases": ddl(importLeases(prefix)),
  "0016_proof_members": ddl(proofMembers(prefix)),
  "0017_due_claims_in_key_order": ddl(dueClaimsInKeyOrder(prefix))
})

// Multi-statement DDL without parameters: node-postgres sends it over the simple protocol.
const ddl = (text: string) => Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text)).pipe(Effect.asVoid)

const initial = (p: string) => `
-- Tenancy: workspace > project > program. Small, read-mostly tables.
CREATE TABLE ${p}workspaces (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  plan        text NOT NULL CHECK (plan IN ('starter', 'growth', 'scale', 'pro')),
  created_at  timestamptz NOT NULL
);

CREATE TABLE ${p}projects (
  id                       text PRIMARY KEY,
  workspace_id             text NOT NULL REFERENCES ${p}workspaces (id),
  site_key                 text NOT NULL,
  name                     text NOT NULL,
  allowed_origins          text[] NOT NULL,
  timezone                 text NOT NULL,
  browser_counting         text NOT NULL CHECK (browser_counting IN ('count', 'display-only')),
  legacy_no_origin_ingest  boolean NOT NULL,
  server_token_hash        text NOT NULL,
  signing_secret_sealed    text NOT NULL,
  created_at               timestamptz NOT NULL
);
CREATE UNIQUE INDEX ${p}projects_site_key ON ${p}projects (site_key);
CREATE INDEX ${p}projects_workspace ON ${p}projects (workspace_id);

CREATE TABLE ${p}programs (
  project_id           text NOT NULL REFERENCES ${p}projects (id),
  id                   text NOT NULL,
  name                 text NOT NULL,
  event_key            text NOT NULL,
  status               text NOT NULL CHECK (status IN ('test', 'live')),
  mode                 text NOT NULL CHECK (mode IN ('continuous')),
  webhook_secret_hash  text NOT NULL,
  milestones           jsonb NOT NULL,
  settings             jsonb NOT NULL,
  created_at           timestamptz NOT NULL,
  PRIMARY KEY (project_id, id)
);
-- Programs are addressed by id alone (customer REST, webhooks); ids are random, so a plain
-- index is enough and stays valid when the table is distributed by project_id.
CREATE INDEX ${p}programs_id ON ${p}programs (id);
-- Not unique on purpose: the port rejects nothing, the services keep event keys unique.
CREATE INDEX ${p}programs_event_key ON ${p}programs (project_id, event_key);

-- Members: the zone a member last sent, and anonymous ids linked to a member.
CREATE TABLE ${p}members (
  project_id  text NOT NULL,
  user_hash   text NOT NULL,
  timezone    text,
  PRIMARY KEY (project_id, user_hash)
);

CREATE TABLE ${p}aliases (
  project_id    text NOT NULL,
  anonymous_id  text NOT NULL,
  user_hash     text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, anonymous_id)
);

-- The per-action path: one streak row per (program, member, ledger), locked FOR UPDATE while an
-- action is counted; one row per active local day.
CREATE TABLE ${p}streaks (
  project_id             text NOT NULL,
  program_id             text NOT NULL,
  user_hash              text NOT NULL,
  ledger                 text NOT NULL CHECK (ledger IN ('live', 'test')),
  last_active_day        date,
  run                    integer NOT NULL,
  best                   integer NOT NULL,
  timezone               text NOT NULL,
  at_risk_notified_for   date,
  broken_notified_after  date,
  due_at                 timestamptz,
  updated_at             timestamptz NOT NULL,
  PRIMARY KEY (project_id, program_id, user_hash, ledger)
);
-- The scheduler's sweep reads only due rows: its cost follows the due rows, not the members.
CREATE INDEX ${p}streaks_due ON ${p}streaks (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX ${p}streaks_member ON ${p}streaks (project_id, user_hash);
CREATE INDEX ${p}streaks_program ON ${p}streaks (program_id, ledger);

CREATE TABLE ${p}activity_days (
  project_id  text NOT NULL,
  program_id  text NOT NULL,
  user_hash   text NOT NULL,
  ledger      text NOT NULL,
  day         date NOT NULL,
  PRIMARY KEY (project_id, program_id, user_hash, ledger, day)
);

CREATE TABLE ${p}achievements (
  project_id    text NOT NULL,
  program_id    text NOT NULL,
  user_hash     text NOT NULL,
  ledger        text NOT NULL,
  milestone_id  text NOT NULL,
  achieved_at   timestamptz NOT NULL,
  PRIMARY KEY (project_id, program_id, user_hash, ledger, milestone_id)
);

-- The append-only action log: a plain heap with no primary key (nothing reads a record by id,
-- and every index is paid on each action). Reports read by program and time; retention and
-- per-project exports by (project_id, received_at). Monthly partitioning can come later without
-- changing the port.
CREATE TABLE ${p}actions (
  project_id        text NOT NULL,
  id                text NOT NULL,
  program_id        text,
  user_hash         text NOT NULL,
  event             text NOT NULL,
  event_type        text NOT NULL,
  door              text NOT NULL,
  ledger            text NOT NULL,
  ts                timestamptz NOT NULL,
  received_at       timestamptz NOT NULL,
  local_date        date NOT NULL,
  timezone          text NOT NULL,
  counted           boolean NOT NULL,
  source            text,
  external_service  text,
  integration_id    text,
  session_id        text,
  idempotency_key   text,
  extra             jsonb
);
CREATE INDEX ${p}actions_program_ts ON ${p}actions (program_id, ledger, ts);
CREATE INDEX ${p}actions_received ON ${p}actions (project_id, received_at);

-- Idempotency keys shared by every replica (docs/api.md#idempotency).
CREATE TABLE ${p}idempotency_keys (
  project_id       text NOT NULL,
  key              text NOT NULL,
  state            text NOT NULL CHECK (state IN ('in_progress', 'completed')),
  created_at       timestamptz NOT NULL,
  claimed_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  response_status  integer,
  -- json, not jsonb: a replay must give back the body exactly as stored (key order included).
  response_body    json,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX ${p}idempotency_keys_created ON ${p}idempotency_keys (created_at);

-- Outbound webhooks: subscriptions, the transactional outbox, and its delivery attempts.
CREATE TABLE ${p}subscriptions (
  project_id       text NOT NULL,
  id               text NOT NULL,
  workspace_id     text NOT NULL,
  program_id       text NOT NULL,
  url              text NOT NULL,
  event_types      text[] NOT NULL,
  secret_sealed    text NOT NULL,
  created_by_type  text NOT NULL CHECK (created_by_type IN ('api_key', 'oauth')),
  created_by_id    text NOT NULL,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (project_id, id)
);
CREATE INDEX ${p}subscriptions_id ON ${p}subscriptions (id);
CREATE INDEX ${p}subscriptions_program ON ${p}subscriptions (program_id);
CREATE INDEX ${p}subscriptions_created_by ON ${p}subscriptions (created_by_type, created_by_id);

CREATE TABLE ${p}outbox (
  project_id       text NOT NULL,
  id               text NOT NULL,
  subscription_id  text NOT NULL,
  program_id       text NOT NULL,
  type             text NOT NULL,
  -- The exact body that is signed and sent: text, because jsonb would re-serialise it.
  payload          text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL,
  next_attempt_at  timestamptz NOT NULL,
  created_at       timestamptz NOT NULL,
  delivered_at     timestamptz,
  PRIMARY KEY (project_id, id)
);
CREATE INDEX ${p}outbox_id ON ${p}outbox (id);
-- The dispatcher reads only pending messages.
CREATE INDEX ${p}outbox_due ON ${p}outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX ${p}outbox_delivered ON ${p}outbox (program_id, type, created_at) WHERE status = 'delivered';

-- Attempts are addressed by message id only (the port carries no project id).
CREATE TABLE ${p}delivery_attempts (
  message_id  text NOT NULL,
  attempt     integer NOT NULL,
  at          timestamptz NOT NULL,
  status      integer,
  latency_ms  double precision NOT NULL,
  error       text,
  PRIMARY KEY (message_id, attempt)
);
CREATE INDEX ${p}delivery_attempts_at ON ${p}delivery_attempts (at);

-- Customer REST credentials (workspace level): token hashes only.
CREATE TABLE ${p}api_keys (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL,
  name          text NOT NULL,
  token_hash    text NOT NULL,
  created_at    timestamptz NOT NULL,
  revoked_at    timestamptz
);
CREATE INDEX ${p}api_keys_token_hash ON ${p}api_keys (token_hash);
CREATE INDEX ${p}api_keys_workspace ON ${p}api_keys (workspace_id);

CREATE TABLE ${p}oauth_grants (
  id             text PRIMARY KEY,
  workspace_ids  text[] NOT NULL,
  app_name       text NOT NULL,
  token_hash     text NOT NULL,
  created_at     timestamptz NOT NULL,
  revoked_at     timestamptz
);
CREATE INDEX ${p}oauth_grants_token_hash ON ${p}oauth_grants (token_hash);

-- Active streakers per workspace and UTC month ("YYYY-MM").
CREATE TABLE ${p}usage (
  workspace_id  text NOT NULL,
  month         text NOT NULL,
  member        text NOT NULL,
  PRIMARY KEY (workspace_id, month, member)
);

-- Proof experiments: at most one running per program, enforced by the partial unique index.
CREATE TABLE ${p}experiments (
  project_id       text NOT NULL,
  id               text NOT NULL,
  program_id       text NOT NULL,
  holdout_percent  integer NOT NULL CHECK (holdout_percent BETWEEN 1 AND 50),
  started_at       timestamptz NOT NULL,
  ended_at         timestamptz,
  PRIMARY KEY (project_id, id)
);
CREATE UNIQUE INDEX ${p}experiments_running ON ${p}experiments (program_id) WHERE ended_at IS NULL;
CREATE INDEX ${p}experiments_program ON ${p}experiments (program_id, started_at);
`

// Each index costs every action an entry (and a WAL record) unless the row update is HOT: no
// indexed column changes and the new version fits on the row's page. A member who acts daily
// keeps `due_at` (the sweep has already moved it to the start of tomorrow, where their action
// puts it again), so room on each page (fillfactor; new pages only) makes their update HOT. The
// member's and the program's rows are read through the primary key instead of their own indexes
// (see `internal/streakStore.ts`). Nothing reads the action log by (project, received_at); a retention
// job can add a BRIN index on `received_at`, which an append-only log keeps cheaply.
const cheaperWritesPerAction = (p: string) => `
DROP INDEX IF EXISTS ${p}streaks_member;
DROP INDEX IF EXISTS ${p}streaks_program;
DROP INDEX IF EXISTS ${p}actions_received;
ALTER TABLE ${p}streaks SET (fillfactor = 80);
`

// Each action of a program with milestones asks which milestones its key already has. The answer
// from the achievements table costs a seek into its primary key, the largest index of the schema
// and rarely in shared buffers; a copy on the streak row (which the action has just locked, so its
// page is in memory) answers it for free. NULL means "not known": read the table. The adapter sets
// the copy whenever it adds an achievement; achievements are removed only with their row
// (\`internal/streakStore.ts\`). Existing rows start at NULL, so the migration rewrites nothing;
// operations.md shows a batched backfill.
const achievedOnStreakRows = (p: string) => `
ALTER TABLE ${p}streaks ADD COLUMN IF NOT EXISTS achieved text[];
`

// Every action seeks the keys of these tables several times (the lock, its ON CONFLICT arbiters,
// the day, the usage mark), comparing ids that are opaque: members' hashes, random ids, ledgers.
// Under the database's default collation each comparison goes through the locale, a seek of the
// streaks key measurably dearer than bytewise (docs/adapters.md, "Compare ids as bytes").
// COLLATE "C" compares bytes. Ordering by these columns becomes byte order,
// whatever the database's locale, which agrees with the memory adapter's string comparison for
// ids without characters from U+E000 up. Changing a key column's collation rebuilds the indexes
// that use it (docs/operations.md, "Production Postgres").
const byteOrderKeys = (p: string) => {
  const keys: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["members", ["project_id", "user_hash"]],
    ["aliases", ["project_id", "anonymous_id", "user_hash"]],
    ["streaks", ["project_id", "program_id", "user_hash", "ledger"]],
    ["activity_days", ["project_id", "program_id", "user_hash", "ledger"]],
    ["achievements", ["project_id", "program_id", "user_hash", "ledger", "milestone_id"]],
    ["actions", ["program_id", "ledger"]],
    ["usage", ["workspace_id", "month", "member"]]
  ]
  return keys.map(([table, columns]) =>
    `ALTER TABLE ${p}${table} ${columns.map((c) => `ALTER COLUMN ${c} TYPE text COLLATE "C"`).join(", ")};`
  ).join("\n")
}

// A member is counted once per month (`UsageStore.markActive`), yet every live action asked
// again: a statement per batch whose ON CONFLICT seeks found the mark there in nearly every case
// ([decisions/0006](../../../docs/decisions/0006-streak-row-carries-hot-reads.md)). The streak row, which the
// action has locked anyway, keeps the month its member was last marked in by an action on it, set
// in the same transaction as the mark; ingest skips the mark when it is the action's month. NULL
// means "not known": mark. Existing rows start at NULL, so the migration rewrites nothing.
const meteredMonthOnStreakRows = (p: string) => `
ALTER TABLE ${p}streaks ADD COLUMN IF NOT EXISTS metered_month text;
`

// Streak policies (docs/streak-semantics.md#streak-policies): a program's policy, and a mode that
// follows its cadence; the streak row's state under a policy (active days in the current period,
// the freeze bank, granted freezes, the last frozen period announced). Every column is nullable and
// NULL means the field is absent, which core reads as its default, so existing rows stay valid and
// nothing is rewritten. The mode's check constraint got its name from the initial CREATE TABLE
// (`<table>_mode_check`); replacing it reads the programs table once, which is small.
const streakPolicies = (p: string) => `
ALTER TABLE ${p}programs DROP CONSTRAINT IF EXISTS ${p}programs_mode_check;
ALTER TABLE ${p}programs ADD CONSTRAINT ${p}programs_mode_check CHECK (mode IN ('continuous', 'weekly', 'monthly'));
ALTER TABLE ${p}programs ADD COLUMN IF NOT EXISTS policy jsonb;
ALTER TABLE ${p}streaks
  ADD COLUMN IF NOT EXISTS period_days integer,
  ADD COLUMN IF NOT EXISTS freezes integer,
  ADD COLUMN IF NOT EXISTS grants jsonb,
  ADD COLUMN IF NOT EXISTS frozen_notified_through date;
`

// Forgiveness (docs/streak-semantics.md#forgiveness): a program's outage windows, and a streak row's
// repairs and pauses, inputs of the streak calculus. NULL means none, so nothing is rewritten.
const forgiveness = (p: string) => `
ALTER TABLE ${p}programs ADD COLUMN IF NOT EXISTS outages jsonb;
ALTER TABLE ${p}streaks ADD COLUMN IF NOT EXISTS forgiveness jsonb;
`

// Distribution by project (docs/scaling.md#the-layout-rules): co-located tables must agree on the
// collation of their distribution column, and an id joined across tables must compare the same way
// on both sides. 0004 gave the per-action keys "C"; every other id column (`id`, `*_id`,
// `user_hash`, `member`, `key`) of every table under the prefix gets it here, "C" because ids are
// opaque bytes (bytewise comparison is also the cheaper one). Run as a catalog walk so that tables
// of migrations numbered before this one get it too. A collation change rewrites no table, only
// the indexes on the column. A program's running experiment becomes unique within its project,
// so that every unique index of a tenant table starts with project_id; program ids are unique
// across projects anyway (`Catalog.insert`).
const oneCollationForIds = (p: string) => `
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT c.relname AS name,
      string_agg(format('ALTER COLUMN %I TYPE text COLLATE "C"', a.attname), ', ' ORDER BY a.attnum) AS changes
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE left(c.relname, ${p.length}) = '${p}' AND c.relname <> '${p}migrations'
      AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype
      AND (a.attname IN ('id', 'user_hash', 'member', 'key') OR a.attname LIKE '%\\_id')
      AND co.collname IS DISTINCT FROM 'C'
    GROUP BY c.relname
  LOOP
    EXECUTE format('ALTER TABLE %I %s', t.name, t.changes);
  END LOOP;
END
$$;
DROP INDEX IF EXISTS ${p}experiments_running;
CREATE UNIQUE INDEX ${p}experiments_running ON ${p}experiments (project_id, program_id) WHERE ended_at IS NULL;
`

// Users with their workspace roles, sign-in sessions and invites (docs/accounts.md): reference
// tables like the other tenancy records. Only hashes of session and invite tokens are kept, and a
// user's password only as its argon2id PHC string. The audit log is append-only, read newest first
// per workspace (or whole, by the operator). A subscription may now be created by a signed-in user,
// and its recent messages are read for its deliveries log.
const accountsAndAudit = (p: string) => `
CREATE TABLE ${p}users (
  id               text COLLATE "C" PRIMARY KEY,
  email            text NOT NULL,
  email_key        text NOT NULL,
  name             text NOT NULL,
  memberships      jsonb NOT NULL,
  password_hash    text,
  failed_sign_ins  timestamptz[] NOT NULL,
  created_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX ${p}users_email_key ON ${p}users (email_key);

CREATE TABLE ${p}sessions (
  id            text COLLATE "C" PRIMARY KEY,
  user_id       text COLLATE "C" NOT NULL,
  token_hash    text NOT NULL,
  created_at    timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX ${p}sessions_token_hash ON ${p}sessions (token_hash);
CREATE INDEX ${p}sessions_user ON ${p}sessions (user_id);

CREATE TABLE ${p}invites (
  id          text COLLATE "C" PRIMARY KEY,
  user_id     text COLLATE "C" NOT NULL,
  token_hash  text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE UNIQUE INDEX ${p}invites_token_hash ON ${p}invites (token_hash);

CREATE TABLE ${p}audit_log (
  id              text COLLATE "C" PRIMARY KEY,
  at              timestamptz NOT NULL,
  workspace_id    text COLLATE "C",
  actor_kind      text NOT NULL,
  actor_id        text COLLATE "C" NOT NULL,
  client_address  text NOT NULL,
  action          text NOT NULL,
  target          text NOT NULL,
  details         jsonb NOT NULL
);
CREATE INDEX ${p}audit_log_workspace_at ON ${p}audit_log (workspace_id, at DESC, id DESC);
CREATE INDEX ${p}audit_log_at ON ${p}audit_log (at DESC, id DESC);

-- A subscription's deliveries log reads its newest messages.
CREATE INDEX ${p}outbox_subscription ON ${p}outbox (subscription_id, created_at DESC);

ALTER TABLE ${p}subscriptions DROP CONSTRAINT IF EXISTS ${p}subscriptions_created_by_type_check;
ALTER TABLE ${p}subscriptions ADD CONSTRAINT ${p}subscriptions_created_by_type_check
  CHECK (created_by_type IN ('api_key', 'oauth', 'user'));
`

// History imports (docs/operations.md#bringing-your-history): each job with its progress (the
// last committed line, so an interrupted import resumes), the identity of every imported line
// (its idempotency key, else member and instant: a re-run finds them all), and the members a job
// touched, recomputed once at its end. Keyed by project first, as every tenant table.
const historyImports = (p: string) => `
CREATE TABLE ${p}imports (
  project_id      text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  program_id      text COLLATE "C" NOT NULL,
  source          text NOT NULL,
  status          text NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
  received        bigint NOT NULL DEFAULT 0,
  imported        bigint NOT NULL DEFAULT 0,
  duplicates      bigint NOT NULL DEFAULT 0,
  rejected        jsonb NOT NULL DEFAULT '[]',
  committed_line  bigint NOT NULL DEFAULT 0,
  started_at      timestamptz NOT NULL,
  finished_at     timestamptz,
  PRIMARY KEY (project_id, id)
);
CREATE INDEX ${p}imports_id ON ${p}imports (id);
CREATE INDEX ${p}imports_resumable ON ${p}imports (program_id, source) WHERE status = 'running';
CREATE TABLE ${p}import_identities (
  project_id  text COLLATE "C" NOT NULL,
  program_id  text COLLATE "C" NOT NULL,
  identity    text COLLATE "C" NOT NULL,
  PRIMARY KEY (project_id, program_id, identity)
);
CREATE TABLE ${p}import_members (
  project_id  text COLLATE "C" NOT NULL,
  import_id   text COLLATE "C" NOT NULL,
  user_hash   text COLLATE "C" NOT NULL,
  PRIMARY KEY (project_id, import_id, user_hash)
);
`

// A program's outage windows change by compare-and-set on this counter
// (`DirectoryStore.changeProgramOutages`), so that windows declared at the same time all stay.
const outageRevisions = (p: string) => `
ALTER TABLE ${p}programs ADD COLUMN IF NOT EXISTS outages_revision integer;
`

// The rollups reports read instead of every action and activity day of a range
// ([decisions/0024](../../../docs/decisions/0024-report-rollups.md)), filled here from what is
// stored and kept from then on by the statements that write actions and days.
// - action_counts: actions per program, ledger, UTC day of \`ts\`, local date, event type and
//   source labels (a missing label is NULL, one key with NULLS NOT DISTINCT).
// - streak_summaries: the streak rows per program, ledger and what their current length depends
//   on (zone and summary), with their number; rows no action has counted on are left out.
// - active_spans: per program, ledger and activity day, how many members were active that day
//   whose previous active day was \`prev\` ('-infinity' for their first): the members active in
//   [from, to] are the days in it whose \`prev\` is before \`from\`.
const reportRollups = (p: string) => `
CREATE TABLE ${p}action_counts (
  project_id        text COLLATE "C" NOT NULL,
  program_id        text COLLATE "C" NOT NULL,
  ledger            text COLLATE "C" NOT NULL,
  day               date NOT NULL,
  local_date        date NOT NULL,
  event_type        text NOT NULL,
  source            text,
  external_service  text,
  integration_id    text COLLATE "C",
  slot              smallint NOT NULL,
  count             bigint NOT NULL,
  counted           bigint NOT NULL,
  UNIQUE NULLS NOT DISTINCT (project_id, program_id, ledger, day, local_date, event_type, source,
    external_service, integration_id, slot)
);
CREATE TABLE ${p}active_spans (
  project_id  text COLLATE "C" NOT NULL,
  program_id  text COLLATE "C" NOT NULL,
  ledger      text COLLATE "C" NOT NULL,
  day         date NOT NULL,
  prev        date NOT NULL,
  slot        smallint NOT NULL,
  members     bigint NOT NULL,
  PRIMARY KEY (project_id, program_id, ledger, day, prev, slot)
);
CREATE TABLE ${p}streak_summaries (
  project_id       text COLLATE "C" NOT NULL,
  program_id       text COLLATE "C" NOT NULL,
  ledger           text COLLATE "C" NOT NULL,
  timezone         text NOT NULL,
  last_active_day  date,
  run              integer NOT NULL,
  period_days      integer,
  freezes          integer,
  grants           jsonb,
  forgiveness      jsonb,
  slot             smallint NOT NULL,
  members          bigint NOT NULL
);
CREATE UNIQUE INDEX ${p}streak_summaries_group ON ${p}streak_summaries (project_id, program_id, ledger, timezone,
  last_active_day, run, period_days, freezes, md5(grants::text), md5(forgiveness::text), slot) NULLS NOT DISTINCT;
${rollupsFill(p)}`

/**
 * The report rollups computed from the actions and activity days stored, added to what the
 * rollups hold, and the Proof rollup of the experiments stored (`fillExperimentMembers`): a fill
 * after rows were written around the adapter (the bench's SQL fill). Multi-statement text without
 * parameters.
 */
export const fillReportRollups = (p: string = defaultPrefix): string => rollupsFill(p) + fillExperimentMembers(p)

// The three rollups of migration 0014 (its backfill), before the Proof rollup existed.
const rollupsFill = (p: string): string => `
INSERT INTO ${p}action_counts AS c
  SELECT project_id, program_id, ledger, (ts AT TIME ZONE 'UTC')::date, local_date, event_type, source,
    external_service, integration_id, 0, count(*), count(*) FILTER (WHERE counted)
  FROM ${p}actions WHERE program_id IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
  ON CONFLICT (project_id, program_id, ledger, day, local_date, event_type, source, external_service, integration_id,
    slot)
  DO UPDATE SET count = c.count + excluded.count, counted = c.counted + excluded.counted;
INSERT INTO ${p}active_spans AS s
  SELECT project_id, program_id, ledger, day, prev, 0, count(*)
  FROM (
    SELECT project_id, program_id, ledger, day,
      coalesce(lag(day) OVER (PARTITION BY project_id, program_id, user_hash, ledger ORDER BY day), '-infinity') AS prev
    FROM ${p}activity_days
  ) AS d
  GROUP BY 1, 2, 3, 4, 5
  ON CONFLICT (project_id, program_id, ledger, day, prev, slot) DO UPDATE SET members = s.members + excluded.members;
${summariesChangeText(`${p}streak_summaries`, undefined, `${p}streaks`, "0")};
`

// The Proof rollup ([decisions/0028](../../../docs/decisions/0028-proof-members.md)), filled here
// for the experiments stored and kept from then on by the statements that write days.
// - experiment_zones: per experiment and zone of its program's members, the start's activity day.
// - experiment_members: per experiment and member with a live day from two days before its start,
//   the zone and start day the row was computed with, the group, the enrolment and return days,
//   the pre-period's active days (x) and per horizon h the active days in [e, e + h) and whether
//   the member was active in the week after.
const proofMembers = (p: string) => `
CREATE TABLE ${p}experiment_zones (
  project_id     text COLLATE "C" NOT NULL,
  program_id     text COLLATE "C" NOT NULL,
  experiment_id  text COLLATE "C" NOT NULL,
  timezone       text COLLATE "C" NOT NULL,
  start_day      date NOT NULL,
  PRIMARY KEY (project_id, program_id, experiment_id, timezone)
);
CREATE TABLE ${p}experiment_members (
  project_id     text COLLATE "C" NOT NULL,
  program_id     text COLLATE "C" NOT NULL,
  experiment_id  text COLLATE "C" NOT NULL,
  user_hash      text COLLATE "C" NOT NULL,
  timezone       text NOT NULL,
  start_day      date,
  control        boolean NOT NULL,
  enrolled       date,
  returned       date,
  x              integer NOT NULL,
  ${stored.horizons.map((h) => `y${h} integer NOT NULL,`).join(" ")}
  ${stored.horizons.map((h) => `r${h} boolean NOT NULL,`).join(" ")}
  PRIMARY KEY (project_id, program_id, experiment_id, user_hash)
);
${fillExperimentMembers(p)}`

/**
 * The Proof rollup computed from the experiments, streak rows and activity days stored, replacing
 * what it holds for them: the migration's backfill, and a fill after rows were written around the
 * adapter (with `fillReportRollups`). Multi-statement text without parameters.
 */
export const fillExperimentMembers = (p: string = defaultPrefix): string => fillText(p)

// The due index orders the rows of one due instant by their key, so that a sweep's claims can
// start where the previous one stopped (internal/streakStore.ts, claimDue) rather than at the
// start of the range, past every row the sweep has already moved (decisions/0029). Built before
// the old one goes, then given its name.
const dueClaimsInKeyOrder = (p: string) => `
CREATE INDEX ${p}streaks_due_next ON ${p}streaks (due_at, project_id, program_id, user_hash, ledger)
  WHERE due_at IS NOT NULL;
DROP INDEX ${p}streaks_due;
ALTER INDEX ${p}streaks_due_next RENAME TO ${p}streaks_due;
`

// An import's owner renews its heartbeat while it works; a running import whose heartbeat is older
// than the lease lost its owner and is claimed (docs/operations.md#bringing-your-history).
const importLeases = (p: string) => `
ALTER TABLE ${p}imports ADD COLUMN heartbeat_at timestamptz, ADD COLUMN loaded boolean NOT NULL DEFAULT false;
UPDATE ${p}imports SET heartbeat_at = coalesce(finished_at, started_at);
ALTER TABLE ${p}imports ALTER COLUMN heartbeat_at SET NOT NULL;
ALTER TABLE ${p}imports DROP CONSTRAINT ${p}imports_status_check;
ALTER TABLE ${p}imports ADD CONSTRAINT ${p}imports_status_check
  CHECK (status IN ('running', 'finished', 'failed', 'interrupted'));
DROP INDEX ${p}imports_resumable;
CREATE INDEX ${p}imports_resumable ON ${p}imports (program_id, source) WHERE status IN ('running', 'interrupted');
CREATE INDEX ${p}imports_heartbeat ON ${p}imports (heartbeat_at) WHERE status = 'running';
`

// The authorization server (docs/oauth.md): clients, codes and the tokens of consented grants,
// which name their client and user. Reference tables like the grants: few rows, no project.
const oauthAuthorizationServer = (p: string) => `
ALTER TABLE ${p}oauth_grants ADD COLUMN client_id text COLLATE "C", ADD COLUMN user_id text COLLATE "C";
CREATE INDEX ${p}oauth_grants_client ON ${p}oauth_grants (client_id) WHERE client_id IS NOT NULL;
CREATE INDEX ${p}oauth_grants_user ON ${p}oauth_grants (user_id) WHERE user_id IS NOT NULL;

CREATE TABLE ${p}oauth_clients (
  id             text COLLATE "C" PRIMARY KEY,
  name           text NOT NULL,
  redirect_uris  text[] NOT NULL,
  secret_hash    text,
  created_at     timestamptz NOT NULL,
  revoked_at     timestamptz
);

CREATE TABLE ${p}oauth_codes (
  id              text COLLATE "C" PRIMARY KEY,
  code_hash       text NOT NULL,
  client_id       text COLLATE "C" NOT NULL,
  user_id         text COLLATE "C" NOT NULL,
  redirect_uri    text NOT NULL,
  code_challenge  text NOT NULL,
  workspace_ids   text[] NOT NULL,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz,
  grant_id        text COLLATE "C"
);
CREATE INDEX ${p}oauth_codes_code_hash ON ${p}oauth_codes (code_hash);

CREATE TABLE ${p}oauth_tokens (
  id          text COLLATE "C" PRIMARY KEY,
  token_hash  text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('access', 'refresh')),
  grant_id    text COLLATE "C" NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX ${p}oauth_tokens_token_hash ON ${p}oauth_tokens (token_hash);
CREATE INDEX ${p}oauth_tokens_grant ON ${p}oauth_tokens (grant_id);
`

const checkPrefix = (prefix: string) =>
  isValidPrefix(prefix)
    ? Effect.succeed(prefix)
    : Effect.fail(
      new PgMigrator.MigrationError({
        reason: "bad-state",
        message: `Invalid table prefix ${JSON.stringify(prefix)}: use lower-case letters, digits and _`
      })
    )

// `PgMigrator.run` is this same migrator plus an optional pg_dump of the schema, which is why its
// type asks for FileSystem, Path and CommandExecutor; without a schemaDirectory it never runs, so
// the plain migrator keeps the requirement to a `SqlClient`.
const migrator = PgMigrator.make({})

/**
 * Applies every pending migration under `prefix` and returns the ones it applied. Idempotent;
 * concurrent callers (threads, processes, replicas) serialise on the advisory lock, and all
 * migrations of one run commit together or not at all.
 */
export const run = (
  options: Options = {}
): Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  PgMigrator.MigrationError | SqlError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const prefix = yield* checkPrefix(options.prefix ?? defaultPrefix)
    const sql = yield* SqlClient.SqlClient
    const table = `${prefix}migrations`
    return yield* sql.withTransaction(Effect.gen(function*() {
      // Waiting for another replica's run, and a migration itself, may take longer than the pool's
      // statement timeout allows a request.
      yield* sql.unsafe("SET LOCAL statement_timeout = 0")
      yield* sql.unsafe(`SELECT pg_advisory_xact_lock(${lockKey})`)
      // Created here, under the lock, so that the migrator's own "create if missing" (a failing
      // `::regclass` probe) never runs inside this transaction, where a failed statement would
      // abort it.
      yield* sql.unsafe(
        `CREATE TABLE IF NOT EXISTS "${table}" (migration_id integer PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), name text NOT NULL)`
      )
      return yield* migrator({ loader: PgMigrator.fromRecord(migrations(prefix)), table })
    }))
  }).pipe(
    // The migrator reports a failing migration as a defect; surface it as the typed error.
    Effect.catchAllDefect((defect) =>
      defect instanceof PgMigrator.MigrationError ? Effect.fail(defect) : Effect.die(defect)
    )
  )

/** Runs the migrations when the layer is built. */
export const layer = (
  options: Options = {}
): Layer.Layer<never, PgMigrator.MigrationError | SqlError, SqlClient.SqlClient> => Layer.effectDiscard(run(options))
