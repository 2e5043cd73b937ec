/**
 * `AchievementStore` on SQLite: the milestones reached on each streak key.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Achievement } from "@streaks/core/Domain"
import type { AchievementStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Codec, decode, encode, insertNew, instant, port, text } from "./sqlite.js"
import { isKey } from "./streakStore.js"

const achievement: Codec<Achievement> = {
  Class: Achievement,
  columns: {
    projectId: text("project_id"),
    programId: text("program_id"),
    userHash: text("user_hash"),
    ledger: text("ledger"),
    milestoneId: text("milestone_id"),
    achievedAt: instant("achieved_at")
  }
}

export const makeAchievementStore = (sql: SqlClient.SqlClient): AchievementStore["Type"] => ({
  achieved: (keys) =>
    Effect.forEach(
      keys,
      (key) =>
        sql`SELECT * FROM achievements WHERE ${isKey(sql, key)} ORDER BY achieved_at, milestone_id`
          .pipe(Effect.map((rows) => rows.map(decode(achievement))))
    ).pipe(port(sql, "AchievementStore.achieved")),

  add: (achievements) =>
    Effect.forEach(achievements, (a) => insertNew(sql, "achievements", encode(achievement, a)))
      .pipe(port(sql, "AchievementStore.add"))
})
