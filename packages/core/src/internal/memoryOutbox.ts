/**
 * The in-memory outbox: messages with their leases and delivery attempts. Every method is one
 * atomic `run` over the shared state.
 */
import { Option } from "effect"
import type { Context } from "effect"
import { type DeliveryAttempt, OutboxMessage } from "../Domain.js"
import type { Held, Outbox, Settlement } from "../Ports.js"
import type { MemoryState, Runner } from "./memoryState.js"

const byDueThenAge = (a: OutboxMessage, b: OutboxMessage): number =>
  a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime() ||
  a.createdAt.getTime() - b.createdAt.getTime() ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** The fields a settlement sets on the message. */
const settled = (message: OutboxMessage, settlement: Settlement): OutboxMessage => {
  switch (settlement._tag) {
    case "Delivered":
      return new OutboxMessage({
        ...message,
        status: "delivered",
        attempts: settlement.attempts,
        deliveredAt: settlement.at
      })
    case "Pending":
      return new OutboxMessage({
        ...message,
        status: "pending",
        attempts: settlement.attempts,
        nextAttemptAt: settlement.nextAttemptAt
      })
    case "Failed":
      return new OutboxMessage({ ...message, status: "failed", attempts: settlement.attempts })
  }
}

export const makeOutbox = (s: MemoryState, { run }: Runner): Context.Tag.Service<Outbox> => {
  const j = s.journal
  const record = (attempt: DeliveryAttempt) =>
    j.set(s.attempts, attempt.messageId, [...(s.attempts.get(attempt.messageId) ?? []), attempt])
  // Only the holder of the current lease may change a claimed message.
  const holds = (message: OutboxMessage | undefined, held: Held): message is OutboxMessage =>
    message !== undefined && message.status === "pending" &&
    message.nextAttemptAt.getTime() === held.leaseUntil.getTime()
  return {
    enqueue: (messages) =>
      run(() => {
        for (const message of messages) j.set(s.messages, message.id, message)
      }),
    claimDue: (now, limit, leaseUntil) =>
      run(() => {
        const t = now.getTime()
        const due: Array<OutboxMessage> = []
        for (const message of s.messages.values()) {
          if (message.status === "pending" && message.nextAttemptAt.getTime() <= t) due.push(message)
        }
        // The lease is the claim: until `leaseUntil` no other claimer sees these messages.
        const messages = due.sort(byDueThenAge).slice(0, Math.max(0, limit)).map((message) => {
          const leased = new OutboxMessage({ ...message, nextAttemptAt: leaseUntil })
          j.set(s.messages, message.id, leased)
          return leased
        })
        const claimed = new Set(messages.map((m) => m.id))
        let nextDueAt: Date | undefined = undefined
        for (const message of s.messages.values()) {
          if (
            message.status === "pending" && !claimed.has(message.id) &&
            (nextDueAt === undefined || message.nextAttemptAt < nextDueAt)
          ) nextDueAt = message.nextAttemptAt
        }
        return { messages, nextDueAt: Option.fromNullable(nextDueAt) }
      }),
    settle: (held, settlement, attempt) =>
      run(() => {
        // The send happened whatever became of the lease, so its attempt is kept either way.
        if (attempt !== undefined) record(attempt)
        const message = s.messages.get(held.id)
        if (!holds(message, held)) return false
        j.set(s.messages, held.id, settled(message, settlement))
        return true
      }),
    recentDelivered: (programId, type, limit) =>
      run(() =>
        [...s.messages.values()]
          .filter((m) => m.programId === programId && m.type === type && m.status === "delivered")
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(0, Math.max(0, limit))
      ),
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
      }),
    ofSubscription: (subscriptionId, limit) =>
      run(() =>
        [...s.messages.values()]
          .filter((m) => m.subscriptionId === subscriptionId)
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(0, Math.max(0, limit))
          .map((message) => ({
            message,
            attempts: [...(s.attempts.get(message.id) ?? [])].sort((a, b) => a.attempt - b.attempt)
          }))
      ),
    redeliver: (subscriptionId, id, now) =>
      run(() => {
        const message = s.messages.get(id)
        if (message === undefined || message.subscriptionId !== subscriptionId) return false
        if (message.status !== "pending") {
          const { deliveredAt: _, ...rest } = message
          j.set(s.messages, id, new OutboxMessage({ ...rest, status: "pending", nextAttemptAt: now }))
        }
        return true
      })
  }
}
