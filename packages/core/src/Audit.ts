/**
 * Audit, the service: records one write by a credential into the `AuditLog` port and reads the log
 * back, newest first, a page at a time (docs/accounts.md#audit-log). A caller that changes records
 * appends the entry inside the same `Transactor.withTransaction`, so the change and its entry
 * commit together or not at all.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { type Actor, AuditEntry } from "./Domain.js"
import { InvalidBody, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import type { WorkspaceId } from "./Ids.js"
import { OutboxSignal } from "./OutboxSignal.js"
import { AuditLog, Transactor } from "./Ports.js"

/** Who is writing, and from where: every entry carries both. */
export interface By {
  readonly actor: Actor
  readonly clientAddress: string
}

/** What a write did. */
export interface Change {
  readonly action: string
  readonly target: string
  readonly workspaceId?: WorkspaceId | undefined
  readonly details?: Record<string, unknown> | undefined
}

export interface Page {
  readonly entries: ReadonlyArray<AuditEntry>
  /** Pass as `cursor` for the next page; absent on the last one. */
  readonly nextCursor?: string | undefined
}

export interface ReadQuery {
  readonly workspaceIds?: ReadonlyArray<WorkspaceId> | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
  readonly cursor?: string | undefined
  /** 1 to 200; default 50. */
  readonly limit?: number | undefined
}

export const maxPage = 200

// A cursor is the last entry's instant and id, opaque to clients (base64url of `<ms>.<id>`).
const cursorOf = (entry: AuditEntry): string =>
  Buffer.from(`${entry.at.getTime()}.${entry.id}`, "utf8").toString("base64url")

const parseCursor = (cursor: string): { readonly at: Date; readonly id: string } | undefined => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const dot = text.indexOf(".")
  const ms = Number(text.slice(0, dot))
  const id = text.slice(dot + 1)
  return dot > 0 && Number.isSafeInteger(ms) && id.startsWith("aud_") && id.length <= 64
    ? { at: new Date(ms), id }
    : undefined
}

export class Audit extends Context.Tag("@streaks/core/Audit")<Audit, {
  /** Appends one entry for `change` made by `by`, at the current time (`Clock`). */
  readonly record: (by: By, change: Change) => Effect.Effect<void, StorageError>
  /** One page of entries, newest first. A malformed cursor or limit is InvalidBody. */
  readonly read: (query: ReadQuery) => Effect.Effect<Page, InvalidBody | StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const log = yield* AuditLog
  return Audit.of({
    record: (by, change) =>
      Effect.gen(function*() {
        const ms = yield* Clock.currentTimeMillis
        yield* log.append([
          new AuditEntry({
            id: Ids.makeAt("AuditEntryId", ms),
            at: new Date(ms),
            ...(change.workspaceId === undefined ? {} : { workspaceId: change.workspaceId }),
            actor: by.actor,
            clientAddress: by.clientAddress,
            action: change.action,
            target: change.target,
            details: change.details ?? {}
          })
        ])
      }),
    read: (query) =>
      Effect.gen(function*() {
        const limit = query.limit ?? 50
        if (!Number.isInteger(limit) || limit < 1 || limit > maxPage) {
          return yield* new InvalidBody({ message: `limit must be 1 to ${maxPage}` })
        }
        const before = query.cursor === undefined ? undefined : parseCursor(query.cursor)
        if (query.cursor !== undefined && before === undefined) {
          return yield* new InvalidBody({ message: "cursor is not one this server gave" })
        }
        if (query.workspaceIds !== undefined && query.workspaceIds.length === 0) return { entries: [] }
        const found = yield* log.list({
          workspaceIds: query.workspaceIds,
          from: query.from,
          to: query.to,
          before,
          limit: limit + 1
        })
        const entries = found.slice(0, limit)
        const last = entries[entries.length - 1]
        return found.length > limit && last !== undefined ? { entries, nextCursor: cursorOf(last) } : { entries }
      })
  })
})

export const layer: Layer.Layer<Audit, never, AuditLog> = Layer.effect(Audit, make)

/**
 * Runs `self` and records what `change` makes of its result as written by `by`, in one
 * transaction: a failure of either undoes both, so a refused write leaves no entry. `change` may
 * answer several entries (one per workspace touched). The dispatcher is woken again after the
 * commit: a service that enqueued messages woke it while they were still uncommitted, inside this
 * transaction, where it could not see them.
 */
export const audited = <A, E, R>(
  by: By,
  change: (a: NoInfer<A>) => Change | ReadonlyArray<Change>,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | StorageError, R | Transactor | Audit | OutboxSignal> =>
  Effect.gen(function*() {
    const transactor = yield* Transactor
    const audit = yield* Audit
    const signal = yield* OutboxSignal
    const result = yield* transactor.withTransaction(
      Effect.tap(self, (a) => {
        const made = change(a)
        return Effect.forEach(Array.isArray(made) ? made : [made as Change], (c) => audit.record(by, c), {
          discard: true
        })
      })
    )
    yield* signal.notify
    return result
  })
