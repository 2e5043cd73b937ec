/**
 * `UsageStore` on Postgres: the members active per workspace and UTC month, a batch's marks in one
 * statement.
 */
import type { UsageEntry, UsageStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { firstOccurrences } from "./batch.js"
import { type Ctx, io } from "./sql.js"

export const makeUsageStore = ({ query, sql, t }: Ctx): UsageStore["Type"] => {
  // One statement for a batch, inserting in one order so that concurrent batches cannot deadlock.
  const markActive = (inputs: ReadonlyArray<UsageEntry>) => {
    const keyOf = (i: { readonly workspaceId: string; readonly month: string; readonly member: string }) =>
      `${i.workspaceId}\u0000${i.month}\u0000${i.member}`
    const sorted = inputs
      .map((i) => ({ workspaceId: i.workspaceId, month: i.month, member: i.member, key: keyOf(i) }))
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    return Effect.map(
      query(sql`INSERT INTO ${t.usage} (workspace_id, month, member)
            SELECT * FROM unnest(${sorted.map((i) => i.workspaceId)}::text[], ${sorted.map((i) => i.month)}::text[],
              ${sorted.map((i) => i.member)}::text[])
            ON CONFLICT DO NOTHING RETURNING workspace_id, month, member`),
      (rows) =>
        firstOccurrences(
          inputs,
          keyOf,
          new Set(rows.map((r) =>
            keyOf({
              workspaceId: r.workspace_id as string,
              month: r.month as string,
              member: r.member as string
            })
          ))
        )
    )
  }
  return {
    markActive: (entries) =>
      entries.length === 0 ? Effect.succeed([]) : markActive(entries).pipe(io("UsageStore.markActive")),

    activeCount: (workspaceId, month) =>
      query(sql`SELECT count(*)::int AS n FROM ${t.usage} WHERE workspace_id = ${workspaceId} AND month = ${month}`)
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("UsageStore.activeCount"))
  }
}
