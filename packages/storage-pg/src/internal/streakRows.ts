/**
 * The streak row as the Postgres adapter stores and reads it: its columns, its decoding, the key
 * columns of a batch as arrays, and the rule for a key's achieved milestones (the row's copy first).
 * Shared by `StreakStore`, `AchievementStore`, `StateStore` and `IngestStore`.
 */
import type { Fragment } from "@effect/sql/Statement"
import { type StreakKey, StreakRow, unsafeMake } from "@streaks/core/Domain"
import type { FreezeGrant, Ledger, Pause, Repair } from "@streaks/core/Domain"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { type Ctx, opt, toDate, toOptionalDate, toOptionalLocalDate } from "./sql.js"

type Row = Record<string, unknown>

// Dates are selected as text: node-postgres would parse `date` into a local-time JS Date.
// Instants as ISO text in UTC, which `new Date` reads natively: node-postgres's own timestamptz
// parser (a regular expression and a field-by-field build) costs more on every read.
const isoInstant = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`

// The policy fields (migration 0006) are NULL in rows written before them: absent, read as defaults.
export const streakColumns =
  `project_id, program_id, user_hash, ledger, to_char(last_active_day, 'YYYY-MM-DD') AS last_active_day, run, best,
  timezone, to_char(at_risk_notified_for, 'YYYY-MM-DD') AS at_risk_notified_for,
  to_char(broken_notified_after, 'YYYY-MM-DD') AS broken_notified_after, period_days, freezes, grants,
  to_char(frozen_notified_through, 'YYYY-MM-DD') AS frozen_notified_through, ${isoInstant("due_at")}, ${
    isoInstant("updated_at")
  },
  metered_month, forgiveness`

// Rows of the hot statements (every action locks one) skip the Schema constructor: `unsafeMake`.
export const decodeStreakRow = (r: Row): StreakRow =>
  unsafeMake(StreakRow, {
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    userHash: r.user_hash as UserHash,
    ledger: r.ledger as Ledger,
    ...opt("lastActiveDay", toOptionalLocalDate(r.last_active_day)),
    run: r.run as number,
    best: r.best as number,
    timezone: r.timezone as string,
    ...opt("atRiskNotifiedFor", toOptionalLocalDate(r.at_risk_notified_for)),
    ...opt("brokenNotifiedAfter", toOptionalLocalDate(r.broken_notified_after)),
    ...opt("periodDays", r.period_days as number | null),
    ...opt("freezes", r.freezes as number | null),
    ...opt("grants", r.grants as ReadonlyArray<FreezeGrant> | null),
    ...opt("frozenNotifiedThrough", toOptionalLocalDate(r.frozen_notified_through)),
    ...opt("dueAt", toOptionalDate(r.due_at)),
    ...forgivenOf(r.forgiveness as Forgiveness | null | undefined),
    updatedAt: toDate(r.updated_at)
  })

/** The `forgiveness` column (migration 0011): the row's repairs and pauses, NULL when none. */
interface Forgiveness {
  readonly repairs?: ReadonlyArray<Repair>
  readonly pauses?: ReadonlyArray<Pause>
}

export const forgivenOf = (f: Forgiveness | null | undefined) =>
  f === null || f === undefined ? {} : {
    ...(f.repairs === undefined || f.repairs.length === 0 ? {} : { repairs: f.repairs }),
    ...(f.pauses === undefined || f.pauses.length === 0 ? {} : { pauses: f.pauses })
  }

/**
 * A key's achieved milestone ids as an array: the streak row's copy (migration 0003) where it is
 * known, else the achievements table (`a`) matched by `sameKey`. The one place of that rule.
 */
export const achievedIds = ({ sql, t }: Pick<Ctx, "sql" | "t">, copy: string, sameKey: Fragment) =>
  sql`CASE WHEN ${sql.literal(copy)} IS NOT NULL THEN ${sql.literal(copy)}
    ELSE ARRAY(SELECT a.milestone_id FROM ${t.achievements} a WHERE ${sameKey}) END`

/**
 * The achievements of the unnested key `k` of the statement's one project (`perProject`), for a
 * member whose hash is in `userHash`.
 */
export const achievementsOfK = (sql: Ctx["sql"], projectId: string, userHash: string) =>
  sql`a.project_id = ${projectId} AND ${
    sql.literal(`a.program_id = k.program_id AND a.user_hash = ${userHash} AND a.ledger = k.ledger`)
  }`

/** The four key columns of many keys as arrays, for `unnest`. */
export const keyArraysOf = (
  sql: Ctx["sql"],
  keys: ReadonlyArray<Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">>
) =>
  sql`${keys.map((k) => k.projectId)}::text[], ${keys.map((k) => k.programId)}::text[],
    ${keys.map((k) => k.userHash)}::text[], ${keys.map((k) => k.ledger)}::text[]`
