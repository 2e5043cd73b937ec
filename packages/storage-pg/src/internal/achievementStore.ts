/**
 * `AchievementStore` on Postgres: the milestones reached on each key, with the copy of their ids
 * on the streak row (migration 0003) kept in the same statement.
 */
import { Achievement, type StreakKey } from "@streaks/core/Domain"
import type { MilestoneId } from "@streaks/core/Ids"
import type { StorageError } from "@streaks/core/Errors"
import type { AchievementStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { firstOccurrences, keyOf } from "./batch.js"
import { perProject } from "./perProject.js"
import { pipelined } from "./pipeline.js"
import { type Ctx, io, toDate, trusted } from "./sql.js"
import { achievedIds, achievementsOfK, keyArraysOf } from "./streakRows.js"

/** What the Postgres ingest store uses beyond the port: the achieved milestone ids alone, the row's copy first. */
export interface AchievementExtras {
  readonly achievedIds: (keys: ReadonlyArray<StreakKey>) => Effect.Effect<
    ReadonlyArray<ReadonlyArray<MilestoneId>>,
    StorageError
  >
}

export const makeAchievementStore = ({ query, sql, t }: Ctx): AchievementStore["Type"] & AchievementExtras => {
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

  // The streak row's copy gains the new id in the same statement. Where the copy is not known
  // yet it is built from the table as this statement sees it (without the new row) plus the new
  // id, so from a member's first achievement on the copy is known. A concurrent add to the same
  // row waits for this one's row lock and then re-applies its SET to the updated copy. One
  // statement per achievement, each a primary-key seek whatever plan it was prepared with.
  const addOne = (a: Achievement) =>
    query(sql`WITH added AS (
          INSERT INTO ${t.achievements} (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
          VALUES (${a.projectId}, ${a.programId}, ${a.userHash}, ${a.ledger}, ${a.milestoneId}, ${a.achievedAt})
          ON CONFLICT DO NOTHING RETURNING milestone_id
        ), copied AS (
          UPDATE ${t.streaks} s SET achieved = ${
      achievedIds({ sql, t }, "s.achieved", whereKey(a))
    } || added.milestone_id
          FROM added WHERE ${whereKey(a)}
        )
        SELECT 1 AS ok FROM added`).pipe(Effect.map((rows) => rows.length > 0), io("AchievementStore.add"))

  return {
    // Per key a range of the achievements' primary key, oldest first: LATERAL with OFFSET 0, which
    // the planner cannot pull up into a join (a join planned while the table was small scanned it
    // whole at every call, for the life of the connection).
    achieved: (keys) =>
      keys.length === 0 ?
        Effect.succeed([]) :
        perProject(keys, (k) => k.projectId, (projectId, group) =>
          query(sql`SELECT k.n, a.milestone_id, a.achieved_at
            FROM unnest(${keyArraysOf(sql, group)}) WITH ORDINALITY AS k (project_id, program_id, user_hash, ledger, n)
            CROSS JOIN LATERAL (
              SELECT milestone_id, achieved_at FROM ${t.achievements} a
              WHERE a.project_id = ${projectId} AND a.program_id = k.program_id AND a.user_hash = k.user_hash
                AND a.ledger = k.ledger
              OFFSET 0
            ) a
            ORDER BY k.n, a.achieved_at, a.milestone_id`).pipe(
            Effect.map((rows) => {
              const achieved = group.map((): Array<Achievement> => [])
              for (const r of rows) {
                const key = group[Number(r.n) - 1]!
                achieved[Number(r.n) - 1]!.push(
                  new Achievement({
                    projectId: key.projectId,
                    programId: key.programId,
                    userHash: key.userHash,
                    ledger: key.ledger,
                    milestoneId: r.milestone_id as MilestoneId,
                    achievedAt: toDate(r.achieved_at)
                  }, trusted)
                )
              }
              return achieved
            })
          )).pipe(io("AchievementStore.achieved")),

    // Per key the copy on its streak row (migration 0003), a primary-key seek into the page the
    // action has just locked (LATERAL with LIMIT 1: see `standing`); only where the copy is not
    // known (NULL: no row yet, or a row from before the migration) is the achievements table read,
    // one primary-key range seek per key (LATERAL, whatever the planner believes of the table).
    achievedIds: (keys) =>
      keys.length === 0 ?
        Effect.succeed([]) :
        perProject(keys, (k) => k.projectId, (projectId, group) =>
          query(sql`SELECT k.n, m.milestone_id
            FROM unnest(${keyArraysOf(sql, group)}) WITH ORDINALITY AS k (project_id, program_id, user_hash, ledger, n)
            LEFT JOIN LATERAL (
              SELECT achieved FROM ${t.streaks} s
              WHERE s.project_id = ${projectId} AND s.program_id = k.program_id AND s.user_hash = k.user_hash
                AND s.ledger = k.ledger LIMIT 1
            ) s ON true
            CROSS JOIN LATERAL unnest(${
            achievedIds({ sql, t }, "s.achieved", achievementsOfK(sql, projectId, "k.user_hash"))
          })
              AS m (milestone_id)
            ORDER BY k.n, m.milestone_id`).pipe(
            Effect.map((rows) => {
              const achieved = group.map((): Array<MilestoneId> => [])
              for (const r of rows) achieved[Number(r.n) - 1]!.push(r.milestone_id as MilestoneId)
              return achieved
            })
          )).pipe(io("AchievementStore.achievedIds")),

    // Sent together (one round trip on a pipelining connection), in input order; a pair given
    // twice is sent once, and answers `false` at its later positions.
    add: (achievements) => {
      const name = (a: Achievement) => `${keyOf(a)}\u0000${a.milestoneId}`
      const seen = new Set<string>()
      const firsts = achievements.filter((a) => !seen.has(name(a)) && seen.add(name(a)) !== undefined)
      return Effect.map(pipelined(firsts.map(addOne)), (added) => {
        const inserted = new Set(firsts.filter((_, i) => added[i]).map(name))
        return firstOccurrences(achievements, name, inserted)
      })
    }
  }
}
