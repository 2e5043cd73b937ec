/**
 * `UsageStore` on SQLite: the members active per workspace and UTC month.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { UsageStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { insertNew, port } from "./sqlite.js"

export const makeUsageStore = (sql: SqlClient.SqlClient): UsageStore["Type"] => ({
  // Transactions run one at a time here: no insert order can deadlock.
  markActive: (entries) =>
    Effect.forEach(
      entries,
      ({ member, month, workspaceId }) => insertNew(sql, "usage", { workspace_id: workspaceId, month, member })
    ).pipe(port(sql, "UsageStore.markActive")),

  activeCount: (workspaceId, month) =>
    sql`SELECT count(*) AS n FROM usage WHERE workspace_id = ${workspaceId} AND month = ${month}`
      .pipe(Effect.map(([r]) => Number(r?.n ?? 0)), port(sql, "UsageStore.activeCount"))
})
