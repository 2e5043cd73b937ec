/**
 * `StateStore` on Postgres: the widgets' reads of a batch in one statement per project.
 */
import type { LocalDate } from "@streaks/core/Calendar"
import type { MilestoneId, UserHash } from "@streaks/core/Ids"
import type { StandingRef } from "@streaks/core/Ports"
import type { StateStore } from "@streaks/core/StateStore"
import { Effect, Option } from "effect"
import { perProject } from "./perProject.js"
import { type Ctx, io } from "./sql.js"
import { achievedIds, achievementsOfK, decodeStreakRow, streakColumns } from "./streakRows.js"

/**
 * `StateStore` on Postgres: the widgets' reads of a batch in one statement per project, per ref
 * the alias, then the member's zone, row, days in range and achievements, each a primary-key seek (a subquery, or
 * LATERAL with LIMIT 1, which the planner cannot pull up into a join: a join planned while the
 * tables were small, as generic plans are once per connection, scanned them whole at every call);
 * the achievements from the row's copy where it is known (see `achievedIds`).
 */
export const makeStateStore = ({ query, sql, t }: Ctx): StateStore["Type"] => {
  const cols = sql.literal(streakColumns)
  // One statement per project of the batch (`perProject`), each naming its project.
  const standingIn = (projectId: string, refs: ReadonlyArray<StandingRef>, from: LocalDate, to: LocalDate) =>
    query(sql`SELECT k.n, m.member_hash, z.timezone AS member_zone, s.*,
            (SELECT string_agg(to_char(day, 'YYYY-MM-DD'), ',' ORDER BY day) FROM ${t.activity_days} d
              WHERE d.project_id = ${projectId} AND d.program_id = k.program_id AND d.user_hash = m.member_hash
                AND d.ledger = k.ledger AND d.day BETWEEN ${from}::date AND ${to}::date) AS days,
            to_json(ARRAY(SELECT unnest(${
      achievedIds({ sql, t }, "s.achieved_copy", achievementsOfK(sql, projectId, "m.member_hash"))
    })
              ORDER BY 1)) AS achieved
          FROM unnest(${refs.map((r) => r.programId)}::text[], ${refs.map((r) => r.userHash)}::text[],
            ${refs.map((r) => r.ledger)}::text[]) WITH ORDINALITY AS k (program_id, user_hash, ledger, n)
          CROSS JOIN LATERAL (SELECT coalesce(
            (SELECT user_hash FROM ${t.aliases} WHERE project_id = ${projectId} AND anonymous_id = k.user_hash),
            k.user_hash) AS member_hash) m
          LEFT JOIN LATERAL (SELECT timezone FROM ${t.members}
            WHERE project_id = ${projectId} AND user_hash = m.member_hash LIMIT 1) z ON true
          LEFT JOIN LATERAL (SELECT ${cols}, achieved AS achieved_copy FROM ${t.streaks}
            WHERE project_id = ${projectId} AND program_id = k.program_id AND user_hash = m.member_hash
              AND ledger = k.ledger LIMIT 1) s ON true
          ORDER BY k.n`).pipe(
      Effect.map((rows) =>
        rows.map((r) => ({
          member: {
            userHash: r.member_hash as UserHash,
            timezone: Option.fromNullable(r.member_zone as string | null)
          },
          row: r.project_id == null ? Option.none() : Option.some(decodeStreakRow(r)),
          // Days as one comma-joined text and ids as JSON rather than arrays, which node-postgres
          // parses character by character.
          days: r.days === null ? [] : (r.days as string).split(",") as Array<LocalDate>,
          achieved: r.achieved as Array<MilestoneId>
        }))
      )
    )
  return {
    standing: (refs, from, to) =>
      refs.length === 0 ?
        Effect.succeed([]) :
        perProject(refs, (r) => r.projectId, (projectId, group) => standingIn(projectId, group, from, to)).pipe(
          io("StateStore.standing")
        )
  }
}
