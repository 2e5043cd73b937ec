/**
 * `AuditLog` on Postgres: entries appended in one insert, read newest first through the
 * `(workspace_id, at, id)` and `(at, id)` indexes, a page at a time by keyset.
 */
import { type ActorKind, AuditEntry } from "@streaks/core/Domain"
import type { AuditEntryId, WorkspaceId } from "@streaks/core/Ids"
import type { AuditLog, AuditQuery } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Ctx, io, opt, toDate, trusted } from "./sql.js"

type Row = Record<string, unknown>

const decode = (r: Row): AuditEntry =>
  new AuditEntry({
    id: r.id as AuditEntryId,
    at: toDate(r.at),
    ...opt("workspaceId", r.workspace_id as WorkspaceId | null),
    actor: { kind: r.actor_kind as ActorKind, id: r.actor_id as string },
    clientAddress: r.client_address as string,
    action: r.action as string,
    target: r.target as string,
    details: r.details as Record<string, unknown>
  }, trusted)

export const makeAuditLog = ({ query, sql, t }: Ctx): AuditLog["Type"] => {
  const append = (entries: ReadonlyArray<AuditEntry>) => {
    const col = <A>(f: (e: AuditEntry) => A) => entries.map(f)
    return query(sql`INSERT INTO ${t.audit_log}
        (id, at, workspace_id, actor_kind, actor_id, client_address, action, target, details)
      SELECT id, at, workspace_id, actor_kind, actor_id, client_address, action, target, details::jsonb
      FROM unnest(${col((e) => e.id)}::text[], ${col((e) => e.at.toISOString())}::timestamptz[],
        ${col((e) => e.workspaceId ?? null)}::text[], ${col((e) => e.actor.kind)}::text[],
        ${col((e) => e.actor.id)}::text[], ${col((e) => e.clientAddress)}::text[], ${col((e) => e.action)}::text[],
        ${col((e) => e.target)}::text[], ${col((e) => JSON.stringify(e.details))}::text[])
        AS e (id, at, workspace_id, actor_kind, actor_id, client_address, action, target, details)`)
  }

  const list = (q: AuditQuery) => {
    const conditions = [
      ...(q.workspaceIds === undefined ? [] : [sql`workspace_id = ANY(${[...q.workspaceIds]}::text[])`]),
      ...(q.from === undefined ? [] : [sql`at >= ${q.from.toISOString()}::timestamptz`]),
      ...(q.to === undefined ? [] : [sql`at < ${q.to.toISOString()}::timestamptz`]),
      ...(q.before === undefined ? [] : [
        sql`(at, id) < (${q.before.at.toISOString()}::timestamptz, ${q.before.id}::text COLLATE "C")`
      ])
    ]
    return Effect.map(
      query(sql`SELECT * FROM ${t.audit_log} WHERE ${sql.and(conditions)}
        ORDER BY at DESC, id COLLATE "C" DESC LIMIT ${q.limit}`),
      (rows) => rows.map(decode)
    )
  }

  return {
    append: (entries) =>
      entries.length === 0 ? Effect.void : append(entries).pipe(Effect.asVoid, io("AuditLog.append")),
    list: (q) => list(q).pipe(io("AuditLog.list"))
  }
}
