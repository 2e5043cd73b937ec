/**
 * `MemberStore` on Postgres: member zones and aliases (anonymous id → member), each batch in one
 * statement.
 */
import type { UserHash } from "@streaks/core/Ids"
import type { MemberRef, MemberStore, MemberZone } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { perProject } from "./perProject.js"
import { type Ctx, io, lastPerKey } from "./sql.js"

export const makeMemberStore = ({ query, sql, t }: Ctx): MemberStore["Type"] => {
  // One round trip for a batch, one statement per project (`perProject`): resolve each id's alias
  // (if any), then the canonical member's zone, each a primary-key seek (LATERAL with LIMIT, which
  // the planner cannot turn into a join): joins let a plan made while the tables were small scan
  // both of them at every call, for the life of the connection (generic plans, `PgConnection`).
  const lookupIn = (projectId: string, inputs: ReadonlyArray<MemberRef>) =>
    Effect.map(
      query(sql`SELECT i.n, coalesce(a.user_hash, i.user_hash) AS user_hash, m.timezone
            FROM unnest(${inputs.map((i) => i.userHash)}::text[], ${inputs.map((_, n) => n)}::int[]) AS i (user_hash, n)
            LEFT JOIN LATERAL (SELECT user_hash FROM ${t.aliases}
              WHERE project_id = ${projectId} AND anonymous_id = i.user_hash LIMIT 1) a ON true
            LEFT JOIN LATERAL (SELECT timezone FROM ${t.members}
              WHERE project_id = ${projectId} AND user_hash = coalesce(a.user_hash, i.user_hash) LIMIT 1) m ON true`),
      (rows) => {
        const out = inputs.map((i) => ({ userHash: i.userHash, timezone: Option.none<string>() }))
        for (const r of rows) {
          out[Number(r.n)] = {
            userHash: r.user_hash as UserHash,
            timezone: Option.fromNullable(r.timezone as string | null | undefined)
          }
        }
        return out
      }
    )
  const lookup = (inputs: ReadonlyArray<MemberRef>) => perProject(inputs, (i) => i.projectId, lookupIn)
  return {
    lookup: (ids) => ids.length === 0 ? Effect.succeed([]) : lookup(ids).pipe(io("MemberStore.lookup")),

    // One statement; a member given twice keeps the last zone (an upsert may not touch a row twice).
    setTimezones: (zones: ReadonlyArray<MemberZone>) => {
      if (zones.length === 0) return Effect.void
      const last = lastPerKey(zones, (z) => `${z.projectId}\u0000${z.userHash}`)
      return query(sql`INSERT INTO ${t.members} (project_id, user_hash, timezone)
        SELECT * FROM unnest(${last.map((z) => z.projectId)}::text[], ${last.map((z) => z.userHash)}::text[],
          ${last.map((z) => z.timezone)}::text[])
        ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`)
        .pipe(Effect.asVoid, io("MemberStore.setTimezones"))
    },

    // The primary key decides: the first insert wins; a concurrent second one waits for it and then
    // does nothing, so its follow-up read sees the committed link.
    link: (projectId, anonymousId, userHash) =>
      Effect.gen(function*() {
        const inserted = yield* query(sql`INSERT INTO ${t.aliases} (project_id, anonymous_id, user_hash)
        VALUES (${projectId}, ${anonymousId}, ${userHash})
        ON CONFLICT (project_id, anonymous_id) DO NOTHING RETURNING 1 AS ok`)
        if (inserted.length > 0) {
          // Ids that pointed at the anonymous id now point at its member: one lookup resolves any chain.
          yield* query(sql`UPDATE ${t.aliases} SET user_hash = ${userHash}
          WHERE project_id = ${projectId} AND user_hash = ${anonymousId}`)
          return "linked" as const
        }
        const existing = yield* query(sql`SELECT user_hash FROM ${t.aliases}
        WHERE project_id = ${projectId} AND anonymous_id = ${anonymousId}`)
        const current = existing[0]?.user_hash as UserHash | undefined
        if (current === undefined || current === userHash) return "unchanged" as const
        return { linkedTo: current }
      }).pipe(io("MemberStore.link"))
  }
}
