/**
 * Claims of due work on a schema distributed by project (Citus): a cross-tenant `FOR UPDATE SKIP
 * LOCKED` cannot be planned there, so each claim statement names one project and runs on its
 * shard (docs/scaling.md#the-two-claims-on-citus).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import type { Ctx } from "./sql.js"

/**
 * Whether `<prefix>streaks` is a Citus distributed table, asked once per store: on plain Postgres
 * (no `pg_dist_partition`) the claims stay one cross-tenant statement each.
 */
export const makeDistributed = ({ prefix, query, sql }: Ctx): Effect.Effect<boolean, SqlError> => {
  let known: boolean | undefined
  return Effect.suspend(() =>
    known !== undefined ? Effect.succeed(known) : Effect.gen(function*() {
      // Unqualified, so that a test can stand in for Citus' catalog table on plain Postgres.
      const [citus] = yield* query(sql`SELECT to_regclass('pg_dist_partition') IS NOT NULL AS ok`)
      const distributed = citus?.ok === true && (yield* query(
            sql`SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(${`${prefix}streaks`})) AS ok`
          ))[0]?.ok === true
      known = distributed
      return distributed
    })
  )
}

/**
 * Claims up to `limit` items project by project, `claim` being one statement filtered by its
 * project. The projects are taken in turn from where the previous call stopped, so the calls of
 * one sweep probe each drained project once rather than once per call: the cost stays one index
 * range per due row plus one probe per project per sweep. Concurrent claimers skip each other's
 * locked rows inside each project's statement, as the single statement does.
 */
export const makeRotation = ({ query, sql, t }: Ctx) => {
  let next = 0
  return <A>(
    limit: number,
    claim: (projectId: string, limit: number) => Effect.Effect<ReadonlyArray<A>, SqlError>
  ): Effect.Effect<ReadonlyArray<A>, SqlError> =>
    Effect.gen(function*() {
      const claimed: Array<A> = []
      if (limit <= 0) return claimed
      const projects = (yield* query(sql`SELECT id FROM ${t.projects} ORDER BY id`)).map((r) => String(r.id))
      for (let i = 0; i < projects.length; i++) {
        const at = (next + i) % projects.length
        claimed.push(...(yield* claim(projects[at]!, limit - claimed.length)))
        if (claimed.length >= limit) {
          // This project may hold more: the next call starts with it.
          next = at
          return claimed
        }
      }
      return claimed
    })
}
