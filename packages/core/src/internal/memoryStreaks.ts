/**
 * In-memory ports of the per-action path: streak rows and activity days, achievements, the
 * action log and idempotency keys. Every method is one atomic `run` over the shared state.
 */
import { Clock, Effect } from "effect"
import type { Context } from "effect"
import type { LocalDate } from "../Calendar.js"
import type { Achievement, ActionRecord, StoredResponse, StreakKey } from "../Domain.js"
import { StreakRow } from "../Domain.js"
import type {
  AchievementStore,
  ActionLog,
  ActionQuery,
  IdempotencyClaim,
  IdempotencyStore,
  RowQuery,
  StreakStore
} from "../Ports.js"
import { keyOf, type MemoryState, pair, type Runner } from "./memoryState.js"

const DAY_MS = 24 * 60 * 60 * 1000
const CLAIM_MS = 30 * 1000

export const makeStreaks = (s: MemoryState, { run }: Runner): Context.Tag.Service<StreakStore> => {
  const j = s.journal
  // The single lock of this adapter already serialises the transaction; creating the row here
  // makes `lock` behave like Postgres' insert-if-missing + SELECT … FOR UPDATE.
  const lock = (key: StreakKey, timezone: string, now: number): StreakRow => {
    const k = keyOf(key)
    const existing = s.streaks.get(k)
    if (existing !== undefined) return existing
    const row = new StreakRow({
      projectId: key.projectId,
      programId: key.programId,
      userHash: key.userHash,
      ledger: key.ledger,
      run: 0,
      best: 0,
      timezone,
      updatedAt: new Date(now)
    })
    j.set(s.streaks, k, row)
    return row
  }
  const addDay = (key: StreakKey, day: LocalDate): boolean => {
    const k = keyOf(key)
    let days = s.days.get(k)
    if (days === undefined) {
      days = new Set()
      j.set(s.days, k, days)
    }
    return j.add(days, day)
  }
  const rows = (query: RowQuery): Array<StreakRow> => {
    if ("keys" in query) {
      const found = new Map<string, StreakRow>()
      for (const key of query.keys) {
        const k = keyOf(key)
        const row = s.streaks.get(k)
        if (row !== undefined) found.set(k, row)
      }
      return [...found.values()]
    }
    if ("programId" in query) {
      return [...s.streaks.values()].filter((r) => r.programId === query.programId && r.ledger === query.ledger)
    }
    return [...s.streaks.values()].filter((r) => r.projectId === query.projectId && r.userHash === query.userHash)
  }
  return {
    lock: (keys) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => run(() => keys.map((k) => lock(k.key, k.timezone, now)))),
    save: (rows) => run(() => rows.forEach((row) => j.set(s.streaks, keyOf(row), row))),
    addDays: (days) => run(() => days.map((d) => addDay(d.key, d.day))),
    days: (key, range) =>
      run(() => {
        const days = [...(s.days.get(keyOf(key)) ?? [])].sort()
        return range === undefined ? days : days.filter((d) => d >= range.from && d <= range.to)
      }),
    rows: (query) => run(() => rows(query)),
    histories: (page) =>
      run(() => {
        const after = page.after
        const selected = [...s.streaks.values()]
          .filter((r) =>
            r.projectId === page.projectId && r.programId === page.programId && r.ledger === page.ledger &&
            (after === undefined || r.userHash > after)
          )
          .sort((a, b) => compare(a.userHash, b.userHash))
          .slice(0, Math.max(1, page.limit))
        return selected.map((r) => ({
          userHash: r.userHash,
          timezone: r.timezone,
          grants: r.grants ?? [],
          days: [...(s.days.get(keyOf(r)) ?? [])]
            .filter((d) => (page.from === undefined || d >= page.from) && (page.to === undefined || d <= page.to))
            .sort(),
          ...(r.repairs === undefined || r.repairs.length === 0 ? {} : { repairs: r.repairs }),
          ...(r.pauses === undefined || r.pauses.length === 0 ? {} : { pauses: r.pauses })
        }))
      }),
    remove: (key) =>
      run(() => {
        const k = keyOf(key)
        j.delete(s.streaks, k)
        j.delete(s.days, k)
        j.delete(s.achievements, k)
      }),
    claimDue: (now, limit) =>
      run(() => {
        // Transactions are serialised, so a claimer inside one never sees rows another claimer
        // holds: that one has saved them with their next dueAt (or rolled back) before we run.
        if (limit <= 0) return []
        const t = now.getTime()
        const due: Array<StreakRow> = []
        for (const row of s.streaks.values()) {
          if (row.dueAt !== undefined && row.dueAt.getTime() <= t) due.push(row)
        }
        return due
          .sort((a, b) => a.dueAt!.getTime() - b.dueAt!.getTime() || compare(keyOf(a), keyOf(b)))
          .slice(0, limit)
      })
  }
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

export const makeAchievements = (s: MemoryState, { run }: Runner): Context.Tag.Service<AchievementStore> => {
  const j = s.journal
  const add = (achievement: Achievement): boolean => {
    const k = keyOf(achievement)
    let byMilestone = s.achievements.get(k)
    if (byMilestone === undefined) {
      byMilestone = new Map()
      j.set(s.achievements, k, byMilestone)
    }
    if (byMilestone.has(achievement.milestoneId)) return false
    j.set(byMilestone, achievement.milestoneId, achievement)
    return true
  }
  return {
    achieved: (keys) => run(() => keys.map((key) => [...(s.achievements.get(keyOf(key))?.values() ?? [])])),
    add: (achievements) => run(() => achievements.map(add))
  }
}

export const makeActionLog = (s: MemoryState, { run }: Runner): Context.Tag.Service<ActionLog> => {
  const j = s.journal
  const select = (q: ActionQuery): Array<ActionRecord> => {
    const programs = new Set<string>(q.programIds)
    const from = q.from.getTime()
    const to = q.to.getTime()
    return s.actions.filter((a) => {
      const ts = a.ts.getTime()
      return a.programId !== undefined && programs.has(a.programId) && a.ledger === q.ledger && ts >= from && ts < to
    })
  }
  return {
    append: (records) => run(() => records.forEach((record) => j.push(s.actions, record))),
    countsByDay: (query) =>
      run(() => {
        const groups = new Map<
          string,
          { date: LocalDate; eventType: ActionRecord["eventType"]; count: number; counted: number }
        >()
        for (const a of select(query)) {
          const k = pair(a.localDate, a.eventType)
          const g = groups.get(k) ?? { date: a.localDate, eventType: a.eventType, count: 0, counted: 0 }
          g.count += 1
          if (a.counted) g.counted += 1
          groups.set(k, g)
        }
        return [...groups.values()].sort((a, b) => compare(a.date, b.date) || compare(a.eventType, b.eventType))
      }),
    sources: (query) =>
      run(() => {
        const groups = new Map<string, {
          source: string | undefined
          externalService: string | undefined
          integrationId: string | undefined
          count: number
        }>()
        for (const a of select(query)) {
          if (!a.counted) continue
          const k = JSON.stringify([a.source ?? null, a.externalService ?? null, a.integrationId ?? null])
          const g = groups.get(k) ??
            { source: a.source, externalService: a.externalService, integrationId: a.integrationId, count: 0 }
          g.count += 1
          groups.set(k, g)
        }
        return [...groups.values()].sort((a, b) => b.count - a.count)
      })
  }
}

export const makeIdempotency = (s: MemoryState, { run }: Runner): Context.Tag.Service<IdempotencyStore> => {
  const j = s.journal
  const claim = (projectId: string, key: string, now: Date): IdempotencyClaim => {
    const k = pair(projectId, key)
    const t = now.getTime()
    const record = s.idempotency.get(k)
    const expired = record === undefined || t - record.claimedAt >= DAY_MS ||
      (record.response === undefined && t - record.claimedAt >= CLAIM_MS)
    if (expired) {
      j.set(s.idempotency, k, { claimedAt: t, response: undefined })
      return { _tag: "Claimed" }
    }
    return record.response === undefined ? { _tag: "InProgress" } : { _tag: "Completed", response: record.response }
  }
  const complete = (projectId: string, key: string, response: StoredResponse, now: Date): void => {
    const k = pair(projectId, key)
    // The lifetime counts from first receipt (docs/api.md#idempotency), so completing keeps `claimedAt`.
    j.set(s.idempotency, k, { claimedAt: s.idempotency.get(k)?.claimedAt ?? now.getTime(), response })
  }
  return {
    // In input order: a key given twice finds its own first claim in progress.
    claim: (keys) => run(() => keys.map((k) => claim(k.projectId, k.key, k.now))),
    complete: (answers) =>
      run(() => {
        for (const a of answers) complete(a.projectId, a.key, a.response, a.now)
      }),
    purgeExpired: (now) =>
      run(() => {
        const t = now.getTime()
        let removed = 0
        for (const [k, record] of s.idempotency) {
          if (t - record.claimedAt >= DAY_MS) {
            j.delete(s.idempotency, k)
            removed += 1
          }
        }
        return removed
      })
  }
}
