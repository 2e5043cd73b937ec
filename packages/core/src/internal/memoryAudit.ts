/**
 * The in-memory `AuditLog`: entries in one array in the order appended, read by a scan.
 */
import type { Context } from "effect"
import type { AuditEntry } from "../Domain.js"
import type { AuditLog } from "../Ports.js"
import type { MemoryState, Runner } from "./memoryState.js"

// Newest first: `at` descending, then the id descending (ids of one instant sort by their random part).
const newestFirst = (a: AuditEntry, b: AuditEntry): number =>
  b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

export const makeAudit = (s: MemoryState, { run }: Runner): Context.Tag.Service<AuditLog> => ({
  append: (entries) => run(() => entries.forEach((entry) => s.journal.push(s.audit, entry))),
  list: (q) =>
    run(() => {
      const workspaces = q.workspaceIds === undefined ? undefined : new Set<string>(q.workspaceIds)
      return s.audit
        .filter((e) =>
          (workspaces === undefined || (e.workspaceId !== undefined && workspaces.has(e.workspaceId))) &&
          (q.from === undefined || e.at.getTime() >= q.from.getTime()) &&
          (q.to === undefined || e.at.getTime() < q.to.getTime()) &&
          (q.before === undefined || newestFirst(e, { at: q.before.at, id: q.before.id } as AuditEntry) > 0)
        )
        .sort(newestFirst)
        .slice(0, q.limit)
    })
})
