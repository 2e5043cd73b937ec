/**
 * Conformance of the ports around an action and its consequences: the action log's report
 * queries, idempotency keys, webhook subscriptions and the outbox (claims with leases).
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { OutboxMessage, Subscription } from "../Domain.js"
import { ActionLog, CredentialStore, IdempotencyStore, Outbox, SubscriptionStore, Transactor } from "../Ports.js"
import {
  at,
  day,
  epoch,
  freshId,
  makeAction,
  makeApiKey,
  makeAttempt,
  makeGrant,
  makeMessage,
  makeSubscription,
  randomHex,
  seedProgram,
  seedTenant,
  type Tenant
} from "./conformanceFixtures.js"
import { ancient, concurrently, DAY, drainOutbox, HOUR, type It, MINUTE, plain, SECOND } from "./conformanceKit.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id).sort()

/** A stored subscription of the tenant's program (outbox rows may reference it). */
const seedSubscription = (tenant: Tenant, overrides: Parameters<typeof makeSubscription>[1] = {}) =>
  Effect.gen(function*() {
    const subscription = makeSubscription(tenant, overrides)
    yield* (yield* SubscriptionStore).create(subscription)
    return subscription
  })

/** The lease a message holds as stored now: what its holder passes to the status updates. */
const held = (m: OutboxMessage) => ({ id: m.id, leaseUntil: m.nextAttemptAt })

/** Takes this test's messages out of every later claim, whatever happened. */
const retire = (messages: ReadonlyArray<OutboxMessage>) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    yield* Effect.forEach(messages, (m) =>
      Effect.flatMap(outbox.get(m.id), (stored) =>
        Option.isSome(stored) && stored.value.status === "pending"
          ? outbox.markFailed(held(stored.value), 0)
          : Effect.succeed(false)), { discard: true })
  }).pipe(Effect.ignore)

export const actionLogSuite = (it: It) =>
  describe("ActionLog", () => {
    it.effect("countsByDay groups the chosen programs' actions on one ledger by local date and event type over [from, to)", () =>
      Effect.gen(function*() {
        const log = yield* ActionLog
        const tenant = yield* seedTenant()
        const b = yield* seedProgram(tenant)
        const c = yield* seedProgram(tenant)
        const a = tenant.program
        const from = new Date("2024-03-01T00:00:00.000Z")
        const to = new Date("2024-03-03T00:00:00.000Z")
        const records = [
          makeAction(a, { ts: from }),
          makeAction(a, { ts: at(from, HOUR), counted: false }),
          makeAction(a, { ts: at(from, 2 * HOUR), eventType: "widget_impression", counted: false }),
          makeAction(a, { ts: at(from, DAY) }),
          // Grouped by the member's local date, not the UTC date of ts.
          makeAction(a, { ts: at(from, 23 * HOUR), timezone: "Asia/Tokyo", localDate: day("2024-03-02") }),
          makeAction(b, { ts: at(from, DAY + HOUR) }),
          // Outside the query: at `to`, before `from`, other ledger, other program.
          makeAction(a, { ts: to }),
          makeAction(a, { ts: at(from, -1) }),
          makeAction(a, { ts: at(from, HOUR), ledger: "test" }),
          makeAction(c, { ts: at(from, HOUR) })
        ]
        yield* Effect.forEach(records, log.append, { discard: true })
        const rows = yield* log.countsByDay({ programIds: [a.id, b.id], from, to, ledger: "live" })
        const key = (r: { date: string; eventType: string }) => `${r.date}/${r.eventType}`
        assert.deepStrictEqual([...rows].sort((x, y) => key(x).localeCompare(key(y))).map(plain), [
          { date: day("2024-03-01"), eventType: "streak_interaction", count: 2, counted: 1 },
          { date: day("2024-03-01"), eventType: "widget_impression", count: 1, counted: 0 },
          { date: day("2024-03-02"), eventType: "streak_interaction", count: 3, counted: 3 }
        ])
        assert.deepStrictEqual(yield* log.countsByDay({ programIds: [], from, to, ledger: "live" }), [])
        const test = yield* log.countsByDay({ programIds: [a.id], from, to, ledger: "test" })
        assert.deepStrictEqual(test.map(plain), [{
          date: day("2024-03-01"),
          eventType: "streak_interaction",
          count: 1,
          counted: 1
        }])
      }))

    it.effect("sources groups counted actions by source, externalService and integrationId over [from, to)", () =>
      Effect.gen(function*() {
        const log = yield* ActionLog
        const { program } = yield* seedTenant()
        const from = new Date("2024-03-01T00:00:00.000Z")
        const to = new Date("2024-03-08T00:00:00.000Z")
        const zapier1 = { source: "api", externalService: "zapier", integrationId: "int_1" }
        const records = [
          makeAction(program, { ...zapier1, ts: from }),
          makeAction(program, { ...zapier1, ts: at(from, DAY) }),
          makeAction(program, { ...zapier1, ts: at(from, DAY), counted: false }),
          makeAction(program, { source: "api", externalService: "zapier", integrationId: "int_2", ts: at(from, DAY) }),
          makeAction(program, { source: "webhook", ts: at(from, 2 * DAY) }),
          makeAction(program, { ts: at(from, 3 * DAY) }),
          makeAction(program, { source: "mcp", ts: to }),
          makeAction(program, { source: "mcp", ts: at(from, HOUR), ledger: "test" })
        ]
        yield* Effect.forEach(records, log.append, { discard: true })
        const rows = yield* log.sources({ programIds: [program.id], from, to, ledger: "live" })
        const norm = rows
          .map((r) => JSON.stringify([r.source ?? null, r.externalService ?? null, r.integrationId ?? null, r.count]))
          .sort()
        assert.deepStrictEqual(
          norm,
          [
            JSON.stringify(["api", "zapier", "int_1", 2]),
            JSON.stringify(["api", "zapier", "int_2", 1]),
            JSON.stringify(["webhook", null, null, 1]),
            JSON.stringify([null, null, null, 1])
          ].sort()
        )
      }))
  })

export const idempotencySuite = (it: It) =>
  describe("IdempotencyStore", () => {
    const t0 = new Date("2024-03-01T12:00:00.000Z")
    const response = { status: 202, body: { ok: true, counted: true } }

    it.effect("the first claim is Claimed and a repeat while in progress is InProgress; keys are per project", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const a = yield* seedTenant()
        const b = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        assert.deepStrictEqual(yield* store.claim(a.project.id, key, t0), { _tag: "Claimed" })
        assert.deepStrictEqual(yield* store.claim(a.project.id, key, at(t0, 29 * SECOND)), { _tag: "InProgress" })
        assert.deepStrictEqual(yield* store.claim(b.project.id, key, t0), { _tag: "Claimed" })
      }))

    it.effect("of 50 concurrent claims of one key exactly one is Claimed", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        const results = yield* concurrently(50, () => store.claim(project.id, key, t0))
        assert.strictEqual(results.filter((r) => r._tag === "Claimed").length, 1)
        assert.strictEqual(results.filter((r) => r._tag === "InProgress").length, 49)
      }))

    it.effect("an in-progress claim older than 30 s is claimed afresh", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        yield* store.claim(project.id, key, t0)
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, 31 * SECOND)), { _tag: "Claimed" })
        // The fresh claim is in progress from its own start.
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, 50 * SECOND)), { _tag: "InProgress" })
      }))

    it.effect("a completed key replays its response within 24 h and is claimed afresh after 24 h", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        yield* store.claim(project.id, key, t0)
        yield* store.complete(project.id, key, response, at(t0, SECOND))
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, 2 * SECOND)), { _tag: "Completed", response })
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, 23 * HOUR)), { _tag: "Completed", response })
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, DAY + MINUTE)), { _tag: "Claimed" })
      }))

    it.effect("release drops an in-progress claim so that a retry is Claimed", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        yield* store.claim(project.id, key, t0)
        yield* store.release(project.id, key)
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, SECOND)), { _tag: "Claimed" })
        yield* store.release(project.id, `idem-${randomHex(8)}`)
      }))

    it.effect("purgeExpired deletes records older than 24 h and keeps younger ones", () => {
      const base = ancient.purge
      return Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const [old, young] = [`idem-${randomHex(8)}`, `idem-${randomHex(8)}`]
        yield* store.claim(project.id, old, base)
        yield* store.complete(project.id, old, response, base)
        yield* store.claim(project.id, young, at(base, 23 * HOUR))
        yield* store.complete(project.id, young, response, at(base, 23 * HOUR))
        const purged = yield* store.purgeExpired(at(base, DAY + MINUTE))
        assert.isAtLeast(purged, 1)
        assert.deepStrictEqual(yield* store.claim(project.id, young, at(base, DAY + 2 * MINUTE)), {
          _tag: "Completed",
          response
        })
      })
    })
  })

export const subscriptionSuite = (it: It) =>
  describe("SubscriptionStore", () => {
    it.effect("create, get and remove round-trip a subscription; removing an unknown id gives None", () =>
      Effect.gen(function*() {
        const subscriptions = yield* SubscriptionStore
        const tenant = yield* seedTenant()
        const subscription = yield* seedSubscription(tenant, { eventTypes: ["streak.at_risk", "streak.broken"] })
        const stored = Option.getOrThrow(yield* subscriptions.get(subscription.id))
        assert.deepStrictEqual(
          { ...plain(stored), eventTypes: [...stored.eventTypes].sort(), createdBy: plain(stored.createdBy) },
          {
            ...plain(subscription),
            eventTypes: [...subscription.eventTypes].sort(),
            createdBy: plain(subscription.createdBy)
          }
        )
        assert.strictEqual(Option.getOrThrow(yield* subscriptions.remove(subscription.id)).id, subscription.id)
        assert.isTrue(Option.isNone(yield* subscriptions.get(subscription.id)))
        assert.isTrue(Option.isNone(yield* subscriptions.remove(subscription.id)))
        assert.isTrue(Option.isNone(yield* subscriptions.remove(freshId("SubscriptionId"))))
      }))

    it.effect("forEvent returns the subscriptions of the program that listen to the type", () =>
      Effect.gen(function*() {
        const subscriptions = yield* SubscriptionStore
        const tenant = yield* seedTenant()
        const other = { ...tenant, program: yield* seedProgram(tenant) }
        const s1 = yield* seedSubscription(tenant, { eventTypes: ["milestone.achieved", "reward.unlocked"] })
        const s2 = yield* seedSubscription(tenant, { eventTypes: ["streak.at_risk"] })
        yield* seedSubscription(other, { eventTypes: ["milestone.achieved", "streak.broken"] })
        const forType = (type: Subscription["eventTypes"][number]) =>
          Effect.map(subscriptions.forEvent(tenant.program.id, type), ids)
        assert.deepStrictEqual(yield* forType("milestone.achieved"), [s1.id])
        assert.deepStrictEqual(yield* forType("reward.unlocked"), [s1.id])
        assert.deepStrictEqual(yield* forType("streak.at_risk"), [s2.id])
        assert.deepStrictEqual(yield* forType("streak.broken"), [])
      }))

    it.effect("removeCreatedBy removes only the subscriptions created with that credential and returns them", () =>
      Effect.gen(function*() {
        const subscriptions = yield* SubscriptionStore
        const credentials = yield* CredentialStore
        const tenant = yield* seedTenant()
        const [key1, key2] = [makeApiKey(tenant.workspace.id), makeApiKey(tenant.workspace.id)]
        const grant = makeGrant([tenant.workspace.id])
        yield* credentials.createApiKey(key1)
        yield* credentials.createApiKey(key2)
        yield* credentials.createGrant(grant)
        const mine = [
          yield* seedSubscription(tenant, { createdBy: { type: "api_key", id: key1.id } }),
          yield* seedSubscription(tenant, { createdBy: { type: "api_key", id: key1.id } })
        ]
        const theirs = [
          yield* seedSubscription(tenant, { createdBy: { type: "api_key", id: key2.id } }),
          yield* seedSubscription(tenant, { createdBy: { type: "oauth", id: grant.id } })
        ]
        assert.deepStrictEqual(ids(yield* subscriptions.removeCreatedBy({ type: "api_key", id: key1.id })), ids(mine))
        for (const s of mine) assert.isTrue(Option.isNone(yield* subscriptions.get(s.id)))
        for (const s of theirs) assert.isTrue(Option.isSome(yield* subscriptions.get(s.id)))
        assert.deepStrictEqual(yield* subscriptions.removeCreatedBy({ type: "api_key", id: key1.id }), [])
        assert.deepStrictEqual(ids(yield* subscriptions.removeCreatedBy({ type: "oauth", id: grant.id })), [
          theirs[1]!.id
        ])
      }))
  })

export const outboxSuite = (it: It) =>
  describe("Outbox", () => {
    // Messages that must never be claimed by another test are due far in the future.
    const future = new Date("2100-01-01T00:00:00.000Z")

    it.effect("enqueue and get round-trip a message; attempts are listed per message in attempt order", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const [m1, m2] = [
          makeMessage(subscription, { nextAttemptAt: future }),
          makeMessage(subscription, { nextAttemptAt: future })
        ]
        yield* outbox.enqueue([m1, m2])
        yield* Effect.gen(function*() {
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* outbox.get(m1.id))), plain(m1))
          const a1 = makeAttempt(m1.id, { attempt: 1, at: epoch, status: 500, latencyMs: 12.5, error: "HTTP 500" })
          const a2 = makeAttempt(m1.id, { attempt: 2, at: at(epoch, 5 * SECOND), latencyMs: 15_000, error: "timeout" })
          yield* outbox.recordAttempt(a2)
          yield* outbox.recordAttempt(a1)
          yield* outbox.recordAttempt(makeAttempt(m2.id))
          assert.deepStrictEqual((yield* outbox.attempts(m1.id)).map(plain), [plain(a1), plain(a2)])
          assert.strictEqual((yield* outbox.attempts(m2.id)).length, 1)
          assert.isTrue(Option.isNone(yield* outbox.get(freshId("MessageId"))))
          assert.deepStrictEqual(yield* outbox.attempts(freshId("MessageId")), [])
        }).pipe(Effect.ensuring(retire([m1, m2])))
      }))

    it.effect("markDelivered, reschedule and markFailed set status, attempts and times", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const [m1, m2] = [
          makeMessage(subscription, { nextAttemptAt: future }),
          makeMessage(subscription, { nextAttemptAt: future })
        ]
        yield* outbox.enqueue([m1, m2])
        yield* Effect.gen(function*() {
          const next = at(future, 5 * SECOND)
          assert.isTrue(yield* outbox.reschedule(held(m1), 1, next))
          const rescheduled = Option.getOrThrow(yield* outbox.get(m1.id))
          assert.deepStrictEqual([rescheduled.status, rescheduled.attempts, rescheduled.nextAttemptAt], [
            "pending",
            1,
            next
          ])
          const deliveredAt = at(epoch, MINUTE)
          assert.isTrue(yield* outbox.markDelivered(held(rescheduled), 2, deliveredAt))
          const delivered = Option.getOrThrow(yield* outbox.get(m1.id))
          assert.deepStrictEqual([delivered.status, delivered.attempts, delivered.deliveredAt], [
            "delivered",
            2,
            deliveredAt
          ])
          assert.isTrue(yield* outbox.markFailed(held(m2), 8))
          const failed = Option.getOrThrow(yield* outbox.get(m2.id))
          assert.deepStrictEqual([failed.status, failed.attempts], ["failed", 8])
        }).pipe(Effect.ensuring(retire([m2])))
      }))

    it.effect("claimDue hands out due pending messages oldest first, at most limit, never delivered, failed or future ones", () => {
      const base = ancient.outboxLimit
      return Effect.gen(function*() {
        const tx = yield* Transactor
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const due = [1, 2, 3, 4, 5].map((i) => makeMessage(subscription, { nextAttemptAt: at(base, i * MINUTE) }))
        const delivered = makeMessage(subscription, { nextAttemptAt: base })
        const failed = makeMessage(subscription, { nextAttemptAt: base })
        const later = makeMessage(subscription, { nextAttemptAt: at(base, 20 * MINUTE) })
        const mine = [...due, delivered, failed, later]
        yield* outbox.enqueue([due[2]!, later, due[0]!, delivered, due[4]!, failed, due[1]!, due[3]!])
        yield* Effect.gen(function*() {
          yield* outbox.markDelivered(held(delivered), 1, base)
          yield* outbox.markFailed(held(failed), 8)
          const now = at(base, 10 * MINUTE)
          const lease = at(base, HOUR)
          const claimed = yield* tx.withTransaction(outbox.claimDue(now, 3, lease))
          assert.strictEqual(claimed.length, 3)
          const own = (ms: ReadonlyArray<OutboxMessage>) =>
            ms.map((m) => m.id).filter((id) => mine.some((x) => x.id === id))
          // Other messages may be due as well; of this test's messages, the oldest ones come first.
          const first = own(claimed)
          assert.deepStrictEqual(first, due.slice(0, first.length).map((m) => m.id))
          const rest = own(yield* drainOutbox(now, lease))
          assert.deepStrictEqual(
            [...first, ...rest],
            due.map((m) => m.id),
            "each due message exactly once, oldest first"
          )
          assert.deepStrictEqual(yield* outbox.claimDue(now, 0, lease), [])
        }).pipe(Effect.ensuring(retire(mine)))
      })
    })

    it.effect("a claimed message is not claimable again before leaseUntil, but is after", () => {
      const base = ancient.outboxLease
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: base })
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const has = (ms: ReadonlyArray<OutboxMessage>) => ms.some((m) => m.id === message.id)
          assert.isTrue(has(yield* drainOutbox(base, at(base, 60 * SECOND))))
          assert.isFalse(has(yield* drainOutbox(at(base, 30 * SECOND), at(base, 90 * SECOND))))
          assert.isTrue(has(yield* drainOutbox(at(base, 61 * SECOND), at(base, 121 * SECOND))))
          const stored = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(stored.status, "pending")
          assert.strictEqual(stored.attempts, 0)
        }).pipe(Effect.ensuring(retire([message])))
      })
    })

    it.effect("a holder whose lease ran out and was claimed again can neither deliver, reschedule nor fail the message, nor reset it once delivered", () => {
      const base = ancient.outboxStale
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: base })
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const mine = (ms: ReadonlyArray<OutboxMessage>) => ms.filter((m) => m.id === message.id)
          const [stale] = mine(yield* drainOutbox(base, at(base, MINUTE)))
          // The first holder's lease runs out; a second claimer takes the message.
          const [current] = mine(yield* drainOutbox(at(base, MINUTE + SECOND), at(base, 2 * MINUTE)))
          assert.isDefined(stale)
          assert.isDefined(current)
          assert.isFalse(yield* outbox.markDelivered(held(stale!), 1, at(base, MINUTE + 2 * SECOND)))
          assert.isFalse(yield* outbox.reschedule(held(stale!), 1, at(base, HOUR)))
          assert.isFalse(yield* outbox.markFailed(held(stale!), 1))
          const untouched = Option.getOrThrow(yield* outbox.get(message.id))
          assert.deepStrictEqual([untouched.status, untouched.attempts, untouched.nextAttemptAt], [
            "pending",
            0,
            at(base, 2 * MINUTE)
          ])
          // The current holder renews its lease (same attempts, later time), then delivers under it.
          const renewed = at(base, 3 * MINUTE)
          assert.isTrue(yield* outbox.reschedule(held(current!), 0, renewed))
          assert.isFalse(
            yield* outbox.markDelivered(held(current!), 1, at(base, MINUTE + 3 * SECOND)),
            "the renewed lease replaced the old one"
          )
          assert.isTrue(
            yield* outbox.markDelivered({ id: message.id, leaseUntil: renewed }, 1, at(base, MINUTE + 3 * SECOND))
          )
          // Once delivered, no holder (stale or not) can set it back to pending or failed.
          assert.isFalse(yield* outbox.reschedule(held(stale!), 2, at(base, 2 * HOUR)))
          assert.isFalse(yield* outbox.reschedule({ id: message.id, leaseUntil: renewed }, 2, at(base, 2 * HOUR)))
          assert.isFalse(yield* outbox.markFailed({ id: message.id, leaseUntil: renewed }, 2))
          const delivered = Option.getOrThrow(yield* outbox.get(message.id))
          assert.deepStrictEqual([delivered.status, delivered.attempts], ["delivered", 1])
          assert.deepStrictEqual(mine(yield* drainOutbox(at(base, DAY), at(base, DAY + MINUTE))), [])
        }).pipe(Effect.ensuring(retire([message])))
      })
    })

    it.effect("two concurrent claimers (in and out of a transaction) never get the same message and together get every due one", () => {
      const base = ancient.outboxClaimers
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const mine = Array.from(
          { length: 30 },
          (_, i) => makeMessage(subscription, { nextAttemptAt: at(base, i * SECOND) })
        )
        yield* outbox.enqueue(mine)
        yield* Effect.gen(function*() {
          const now = at(base, HOUR)
          const lease = at(base, 2 * HOUR)
          const [first, second] = yield* Effect.all([
            drainOutbox(now, lease, { transaction: true }),
            drainOutbox(now, lease, { transaction: false })
          ], { concurrency: "unbounded" })
          const claimed = [...first, ...second].map((m) => m.id)
          assert.strictEqual(new Set(claimed).size, claimed.length, "a message was handed to both claimers")
          assert.isTrue(mine.every((m) => claimed.includes(m.id)), "every due message is claimed")
        }).pipe(Effect.ensuring(retire(mine)))
      })
    })

    it.effect("recentDelivered lists delivered messages of one program and type, newest first by creation, at most limit", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const tenant = yield* seedTenant()
        const other = { ...tenant, program: yield* seedProgram(tenant) }
        const subscription = yield* seedSubscription(tenant)
        const otherSubscription = yield* seedSubscription(other)
        const created = (i: number) => at(epoch, i * MINUTE)
        const delivered = [1, 3, 2, 4].map((i) =>
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(i) })
        )
        const excluded = [
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(9) }),
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(8) }),
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(7), type: "reward.unlocked" }),
          makeMessage(otherSubscription, { nextAttemptAt: future, createdAt: created(6) })
        ]
        yield* outbox.enqueue([...delivered, ...excluded])
        yield* Effect.gen(function*() {
          for (const m of [...delivered, excluded[2]!, excluded[3]!]) {
            yield* outbox.markDelivered(held(m), 1, created(10))
          }
          yield* outbox.markFailed(held(excluded[1]!), 8)
          const newestFirst = [...delivered].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).map((m) =>
            m.id
          )
          const recent = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 3)
          assert.deepStrictEqual(recent.map((m) => m.id), newestFirst.slice(0, 3))
          const all = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 10)
          assert.deepStrictEqual(all.map((m) => m.id), newestFirst)
          assert.isTrue(all.every((m) => m.status === "delivered"))
          assert.deepStrictEqual(yield* outbox.recentDelivered(tenant.program.id, "streak.broken", 3), [])
        }).pipe(Effect.ensuring(retire([excluded[0]!])))
      }))

    it.effect("nextDueAt is the earliest nextAttemptAt of a pending message", () => {
      const base = ancient.nextDue
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const [early, next] = [
          makeMessage(subscription, { nextAttemptAt: base }),
          makeMessage(subscription, { nextAttemptAt: at(base, SECOND) })
        ]
        yield* outbox.enqueue([next, early])
        yield* Effect.gen(function*() {
          assert.deepStrictEqual(yield* outbox.nextDueAt, Option.some(base))
          yield* outbox.markDelivered(held(early), 1, base)
          assert.deepStrictEqual(yield* outbox.nextDueAt, Option.some(at(base, SECOND)))
        }).pipe(Effect.ensuring(retire([early, next])))
      })
    })

    it.effect("purgeAttempts deletes attempts older than `before` and counts them", () => {
      const base = ancient.purge
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: future })
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const attempts = [0, 1, 2].map((i) =>
            makeAttempt(message.id, { attempt: i + 1, at: at(base, i * HOUR), status: 503 })
          )
          yield* Effect.forEach(attempts, outbox.recordAttempt, { discard: true })
          assert.isAtLeast(yield* outbox.purgeAttempts(at(base, 90 * MINUTE)), 2)
          assert.deepStrictEqual((yield* outbox.attempts(message.id)).map(plain), [plain(attempts[2]!)])
        }).pipe(Effect.ensuring(retire([message])))
      })
    })
  })
