/**
 * `AuditLog` on SQLite: entries appended one statement each, read newest first by keyset.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { type ActorKind, AuditEntry } from "@streaks/core/Domain"
import type { AuditLog, AuditQuery } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Codec, decode, encode, instant, json, port, text } from "./sqlite.js"

const entry: Codec<AuditEntry> = {
  Class: AuditEntry,
  columns: {
    id: text("id"),
    at: instant("at"),
    workspaceId: text("workspace_id"),
    actor: {
      name: "actor_id",
      encode: (actor) => ({ actor_kind: actor.kind, actor_id: actor.id }),
      decode: (row) => ({ kind: String(row.actor_kind) as ActorKind, id: String(row.actor_id) })
    },
    clientAddress: text("client_address"),
    action: text("action"),
    target: text("target"),
    details: json<Record<string, unknown>>("details")
  }
}

export const makeAuditLog = (sql: SqlClient.SqlClient): AuditLog["Type"] => {
  const list = (q: AuditQuery) => {
    const conditions = [
      ...(q.workspaceIds === undefined ? [] : [sql.in("workspace_id", [...q.workspaceIds])]),
      ...(q.from === undefined ? [] : [sql`at >= ${q.from.getTime()}`]),
      ...(q.to === undefined ? [] : [sql`at < ${q.to.getTime()}`]),
      ...(q.before === undefined ? [] : [
        sql`(at < ${q.before.at.getTime()} OR (at = ${q.before.at.getTime()} AND id < ${q.before.id}))`
      ])
    ]
    return sql`SELECT * FROM audit_log WHERE ${sql.and(conditions)} ORDER BY at DESC, id DESC LIMIT ${q.limit}`.pipe(
      Effect.map((rows) => rows.map(decode(entry)))
    )
  }
  return {
    append: (entries) =>
      Effect.forEach(entries, (e) => sql`INSERT INTO audit_log ${sql.insert(encode(entry, e))}`, { discard: true })
        .pipe(port(sql, "AuditLog.append")),
    list: (q) => list(q).pipe(port(sql, "AuditLog.list"))
  }
}
