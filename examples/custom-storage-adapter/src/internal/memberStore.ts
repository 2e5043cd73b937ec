/**
 * `MemberStore` on SQLite: members' zones and their aliases (anonymous id → member).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { UserHash } from "@streaks/core/Ids"
import type { MemberRef, MemberStore } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { insertNew, port } from "./sqlite.js"

export const makeMemberStore = (sql: SqlClient.SqlClient): MemberStore["Type"] => {
  // One statement: resolve the alias (if any), then the canonical member's zone.
  const lookup = ({ projectId, userHash }: MemberRef) =>
    sql`WITH canonical AS (
          SELECT coalesce(
            (SELECT user_hash FROM aliases WHERE project_id = ${projectId} AND anonymous_id = ${userHash}),
            ${userHash}) AS user_hash
        )
        SELECT c.user_hash AS user_hash, m.timezone AS timezone
        FROM canonical c LEFT JOIN members m ON m.project_id = ${projectId} AND m.user_hash = c.user_hash`.pipe(
      Effect.map(([r]) => ({
        userHash: r!.user_hash as UserHash,
        timezone: Option.fromNullable(r!.timezone as string | null)
      }))
    )

  return {
    // SQLite answers in-process: a statement per id costs no round trip.
    lookup: (ids) => Effect.forEach(ids, lookup).pipe(port(sql, "MemberStore.lookup")),

    setTimezones: (zones) =>
      Effect.forEach(
        zones,
        ({ projectId, timezone, userHash }) =>
          sql`INSERT INTO members (project_id, user_hash, timezone) VALUES (${projectId}, ${userHash}, ${timezone})
            ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`,
        { discard: true }
      ).pipe(port(sql, "MemberStore.setTimezones")),

    // The primary key decides, and the read that follows is in the same exclusive unit.
    link: (projectId, anonymousId, userHash) =>
      Effect.gen(function*() {
        const linked = yield* insertNew(sql, "aliases", {
          project_id: projectId,
          anonymous_id: anonymousId,
          user_hash: userHash
        })
        if (linked) {
          yield* sql`UPDATE aliases SET user_hash = ${userHash}
            WHERE project_id = ${projectId} AND user_hash = ${anonymousId}`
          return "linked" as const
        }
        const [existing] =
          yield* sql`SELECT user_hash FROM aliases WHERE project_id = ${projectId} AND anonymous_id = ${anonymousId}`
        const current = existing?.user_hash as UserHash | undefined
        return current === undefined || current === userHash ? "unchanged" as const : { linkedTo: current }
      }).pipe(port(sql, "MemberStore.link"))
  }
}
