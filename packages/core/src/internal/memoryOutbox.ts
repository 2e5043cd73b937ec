/**
 * In-memory ports of outbound delivery: webhook subscriptions and the outbox with its delivery
 * attempts. Every method is one atomic `run` over the shared state.
 */
import { Option } from "effect"
import type { Context } from "effect"
import { OutboxMessage } from "../Domain.js"
import type { MessageId } from "../Ids.js"
import type { Outbox, SubscriptionStore } from "../Ports.js"
import type { MemoryState, Runner } from "./memoryState.js"

export const makeSubscriptions = (s: MemoryState, { run }: Runner): Context.Tag.Service<SubscriptionStore> => {
  const j = s.journal
  return {
    create: (subscription) => run(() => j.set(s.subscriptions, subscription.id, subscription)),
    get: (id) => run(() => Option.fromNullable(s.subscriptions.get(id))),
    remove: (id) =>
      run(() => {
        const subscription = s.subscriptions.get(id)
        if (subscription === undefined) return Option.none()
        j.delete(s.subscriptions, id)
        return Option.some(subscription)
      }),
    forEvent: (programId, type) =>
      run(() =>
        [...s.subscriptions.values()].filter((sub) => sub.programId === programId && sub.eventTypes.includes(type))
      ),
    removeCreatedBy: (credential) =>
      run(() => {
        const removed = [...s.subscriptions.values()].filter((sub) =>
          sub.createdBy.type === credential.type && sub.createdBy.id === credential.id
        )
        for (const sub of removed) j.delete(s.subscriptions, sub.id)
        return removed
      })
  }
}

const byDueThenAge = (a: OutboxMessage, b: OutboxMessage): number =>
  a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime() ||
  a.createdAt.getTime() - b.createdAt.getTime() ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const makeOutbox = (s: MemoryState, { run }: Runner): Context.Tag.Service<Outbox> => {
  const j = s.journal
  // Only the holder of the current lease may change a claimed message.
  const update = (held: { readonly id: MessageId; readonly leaseUntil: Date }, patch: Partial<OutboxMessage>) =>
    run(() => {
      const message = s.messages.get(held.id)
      if (
        message === undefined || message.status !== "pending" ||
        message.nextAttemptAt.getTime() !== held.leaseUntil.getTime()
      ) return false
      j.set(s.messages, held.id, new OutboxMessage({ ...message, ...patch }))
      return true
    })
  return {
    enqueue: (messages) =>
      run(() => {
        for (const message of messages) j.set(s.messages, message.id, message)
      }),
    claimDue: (now, limit, leaseUntil) =>
      run(() => {
        if (limit <= 0) return []
        const t = now.getTime()
        const due: Array<OutboxMessage> = []
        for (const message of s.messages.values()) {
          if (message.status === "pending" && message.nextAttemptAt.getTime() <= t) due.push(message)
        }
        // The lease is the claim: until `leaseUntil` no other claimer sees these messages.
        return due.sort(byDueThenAge).slice(0, limit).map((message) => {
          const leased = new OutboxMessage({ ...message, nextAttemptAt: leaseUntil })
          j.set(s.messages, message.id, leased)
          return leased
        })
      }),
    recordAttempt: (attempt) =>
      run(() => j.set(s.attempts, attempt.messageId, [...(s.attempts.get(attempt.messageId) ?? []), attempt])),
    attempts: (messageId) =>
      run(() =>
        [...(s.attempts.get(messageId) ?? [])].sort((a, b) => a.attempt - b.attempt || a.at.getTime() - b.at.getTime())
      ),
    markDelivered: (held, attempts, at) => update(held, { status: "delivered", attempts, deliveredAt: at }),
    reschedule: (held, attempts, nextAttemptAt) => update(held, { status: "pending", attempts, nextAttemptAt }),
    markFailed: (held, attempts) => update(held, { status: "failed", attempts }),
    get: (id) => run(() => Option.fromNullable(s.messages.get(id))),
    recentDelivered: (programId, type, limit) =>
      run(() =>
        [...s.messages.values()]
          .filter((m) => m.programId === programId && m.type === type && m.status === "delivered")
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(0, Math.max(0, limit))
      ),
    nextDueAt: run(() => {
      let earliest: Date | undefined = undefined
      for (const message of s.messages.values()) {
        if (message.status === "pending" && (earliest === undefined || message.nextAttemptAt < earliest)) {
          earliest = message.nextAttemptAt
        }
      }
      return Option.fromNullable(earliest)
    }),
    purgeAttempts: (before) =>
      run(() => {
        const t = before.getTime()
        let removed = 0
        for (const [id, attempts] of s.attempts) {
          const kept = attempts.filter((a) => a.at.getTime() >= t)
          if (kept.length === attempts.length) continue
          removed += attempts.length - kept.length
          if (kept.length === 0) j.delete(s.attempts, id)
          else j.set(s.attempts, id, kept)
        }
        return removed
      })
  }
}
