/**
 * Conformance of the ports around an action and its consequences: the action log's report
 * queries, idempotency keys, webhook subscriptions (the store core builds on the catalog) and the
 * outbox (claims with leases, settlements, delivery attempts).
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { OutboxMessage, type Subscription } from "@streaks/core/Domain"
import {
  ActionLog,
  CredentialStore,
  type Held,
  IdempotencyStore,
  Outbox,
  type Settlement,
  SubscriptionStore,
  Transactor
} from "@streaks/core/Ports"
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
} from "../Fixtures.js"
import {
  ancient,
  Boom,
  concurrently,
  countTrue,
  DAY,
  drainOutbox,
  HOUR,
  type It,
  MINUTE,
  plain,
  SECOND
} from "./kit.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id).sort()

/** A stored subscription of the tenant's program (outbox rows may reference it). */
const seedSubscription = (tenant: Tenant, overrides: Parameters<typeof makeSubscription>[1] = {}) =>
  Effect.gen(function*() {
    const subscription = makeSubscription(tenant, overrides)
    yield* (yield* SubscriptionStore).create(subscription)
    return subscription
  })

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
        // In two calls, and an empty one in between: appends add up.
        yield* log.append(records.slice(0, 5))
        yield* log.append([])
        yield* log.append(records.slice(5))
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
        yield* log.append(records)
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

    it.effect("a claim made in a unit of work that fails is freed with it: a retry is Claimed", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const store = yield* IdempotencyStore
        const { project } = yield* seedTenant()
        const key = `idem-${randomHex(8)}`
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          assert.deepStrictEqual(yield* store.claim(project.id, key, t0), { _tag: "Claimed" })
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, SECOND)), { _tag: "Claimed" })
        // A claim that commits stays: the next one is in progress.
        assert.deepStrictEqual(yield* store.claim(project.id, key, at(t0, 2 * SECOND)), { _tag: "InProgress" })
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

    it.effect("removeCreatedBy removes only the subscriptions of the given workspaces created with that credential and returns them", () =>
      Effect.gen(function*() {
        const subscriptions = yield* SubscriptionStore
        const credentials = yield* CredentialStore
        const tenant = yield* seedTenant()
        const second = yield* seedTenant()
        const third = yield* seedTenant()
        const [key1, key2] = [makeApiKey(tenant.workspace.id), makeApiKey(tenant.workspace.id)]
        // A grant spans workspaces: what it created is removed per workspace asked for.
        const grant = makeGrant([tenant.workspace.id, second.workspace.id, third.workspace.id])
        yield* credentials.createApiKey(key1)
        yield* credentials.createApiKey(key2)
        yield* credentials.createGrant(grant)
        const byKey1 = { type: "api_key", id: key1.id } as const
        const byGrant = { type: "oauth", id: grant.id } as const
        const mine = [
          yield* seedSubscription(tenant, { createdBy: byKey1 }),
          yield* seedSubscription(tenant, { createdBy: byKey1 })
        ]
        const theirs = yield* seedSubscription(tenant, { createdBy: { type: "api_key", id: key2.id } })
        const granted = [
          yield* seedSubscription(tenant, { createdBy: byGrant }),
          yield* seedSubscription(second, { createdBy: byGrant }),
          yield* seedSubscription(third, { createdBy: byGrant })
        ]
        assert.deepStrictEqual(ids(yield* subscriptions.removeCreatedBy([tenant.workspace.id], byKey1)), ids(mine))
        for (const s of mine) assert.isTrue(Option.isNone(yield* subscriptions.get(s.id)))
        for (const s of [theirs, ...granted]) assert.isTrue(Option.isSome(yield* subscriptions.get(s.id)))
        assert.deepStrictEqual(yield* subscriptions.removeCreatedBy([tenant.workspace.id], byKey1), [])
        assert.deepStrictEqual(yield* subscriptions.removeCreatedBy([], byGrant), [])
        assert.deepStrictEqual(
          ids(yield* subscriptions.removeCreatedBy([tenant.workspace.id, second.workspace.id], byGrant)),
          ids(granted.slice(0, 2))
        )
        assert.isTrue(Option.isSome(yield* subscriptions.get(granted[2]!.id)))
        assert.isTrue(Option.isSome(yield* subscriptions.get(theirs.id)))
      }))
  })

/** What became of a message a test enqueued, as the outbox shows it: claims and recentDelivered. */
const stateOf = (m: OutboxMessage) => [m.status, m.attempts, m.nextAttemptAt, m.deliveredAt]

const delivered = (attempts: number, at: Date): Settlement => ({ _tag: "Delivered", attempts, at })
const pending = (attempts: number, nextAttemptAt: Date): Settlement => ({ _tag: "Pending", attempts, nextAttemptAt })
const failed = (attempts: number): Settlement => ({ _tag: "Failed", attempts })

/** The message held under `leaseUntil`: by default the `nextAttemptAt` the test last saw (enqueued, or as its claim answered it). */
const holding = (m: OutboxMessage, leaseUntil: Date = m.nextAttemptAt): Held => ({ id: m.id, leaseUntil })

/**
 * Takes this test's messages out of every later claim, whatever happened: fails each one still
 * pending under any of the instants it may hold (as enqueued, or one of the test's leases).
 */
const retire = (messages: ReadonlyArray<OutboxMessage>, leases: ReadonlyArray<Date> = []) =>
  Effect.flatMap(Outbox, (outbox) =>
    Effect.forEach(
      messages.flatMap((m) => [m.nextAttemptAt, ...leases].map((leaseUntil) => holding(m, leaseUntil))),
      (held) => outbox.settle(held, failed(0)),
      { discard: true }
    )).pipe(Effect.ignore)

/** This test's messages among `claimed`, in the order claimed. */
const ownOf = (mine: ReadonlyArray<OutboxMessage>) => (claimed: ReadonlyArray<OutboxMessage>) =>
  claimed.filter((m) => mine.some((x) => x.id === m.id))

/** Instants of the outbox tests that `kit`'s `ancient` does not name. */
const past = {
  settle: new Date("1999-01-01T00:00:00.000Z"),
  roundTrip: new Date("1999-02-01T00:00:00.000Z"),
  attempts: new Date("1999-03-01T00:00:00.000Z"),
  // Past every message any test enqueues, claims or leases: a claim then sees every pending message.
  endOfTime: new Date("9000-01-01T00:00:00.000Z")
} as const

export const outboxSuite = (it: It) =>
  describe("Outbox", () => {
    // Messages that must never be claimed by another test are due far in the future.
    const future = new Date("2100-01-01T00:00:00.000Z")

    it.effect("enqueue keeps every field and the payload byte for byte: claimDue hands the message back as enqueued, leased", () => {
      const base = past.roundTrip
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        // Spacing, key order, escapes, non-ASCII and a lone-surrogate escape: none may be normalised.
        const payload =
          "{\"type\":\"streak.broken\",  \"data\" : {\"b\":1,\"a\":\"é – 😀 \\u2028 \\ud800\",\"n\":1.50e+2}}\n"
        const message = makeMessage(subscription, {
          type: "streak.broken",
          payload,
          attempts: 3,
          nextAttemptAt: base,
          createdAt: at(base, -DAY)
        })
        yield* outbox.enqueue([message])
        const lease = at(base, MINUTE)
        yield* Effect.gen(function*() {
          const [claimed] = ownOf([message])(yield* drainOutbox(base, lease))
          assert.isDefined(claimed)
          assert.strictEqual(claimed!.payload, payload)
          assert.deepStrictEqual(plain(claimed!), plain(new OutboxMessage({ ...message, nextAttemptAt: lease })))
        }).pipe(Effect.ensuring(retire([message], [lease])))
      })
    })

    it.effect("claimDue hands out due pending messages oldest first, at most limit, never delivered, failed or future ones", () => {
      const base = ancient.outboxLimit
      return Effect.gen(function*() {
        const tx = yield* Transactor
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const due = [1, 2, 3, 4, 5].map((i) => makeMessage(subscription, { nextAttemptAt: at(base, i * MINUTE) }))
        const deliveredOne = makeMessage(subscription, { nextAttemptAt: base })
        const failedOne = makeMessage(subscription, { nextAttemptAt: base })
        const later = makeMessage(subscription, { nextAttemptAt: at(base, 20 * MINUTE) })
        const mine = [...due, deliveredOne, failedOne, later]
        const own = ownOf(mine)
        const lease = at(base, HOUR)
        yield* outbox.enqueue([due[2]!, later, due[0]!, deliveredOne, due[4]!, failedOne, due[1]!, due[3]!])
        yield* Effect.gen(function*() {
          assert.isTrue(yield* outbox.settle(holding(deliveredOne), delivered(1, base)))
          assert.isTrue(yield* outbox.settle(holding(failedOne), failed(8)))
          const now = at(base, 10 * MINUTE)
          const claimed = yield* tx.withTransaction(outbox.claimDue(now, 3, lease))
          assert.strictEqual(claimed.messages.length, 3)
          // Other messages may be due as well; of this test's messages, the oldest ones come first.
          const first = own(claimed.messages).map((m) => m.id)
          assert.deepStrictEqual(first, due.slice(0, first.length).map((m) => m.id))
          const rest = own(yield* drainOutbox(now, lease)).map((m) => m.id)
          assert.deepStrictEqual(
            [...first, ...rest],
            due.map((m) => m.id),
            "each due message exactly once, oldest first"
          )
          assert.deepStrictEqual((yield* outbox.claimDue(now, 0, lease)).messages, [])
        }).pipe(Effect.ensuring(retire(mine, [lease])))
      })
    })

    it.effect("claimDue answers nextDueAt: the earliest nextAttemptAt of a pending message it did not just claim", () => {
      const base = ancient.nextDue
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const [early, next, later] = [0, 1, 2].map((i) =>
          makeMessage(subscription, { nextAttemptAt: at(base, i * SECOND) })
        ) as [OutboxMessage, OutboxMessage, OutboxMessage]
        const mine = [early, next, later]
        const own = ownOf(mine)
        const leases = [at(base, 500), at(base, 5 * SECOND), at(base, 3 * SECOND)]
        yield* outbox.enqueue([later, next, early])
        yield* Effect.gen(function*() {
          // `early`'s new lease (base + 0.5 s) is the earliest instant, but it was just claimed.
          const first = yield* outbox.claimDue(base, 10, leases[0]!)
          assert.deepStrictEqual(own(first.messages).map((m) => m.id), [early.id])
          assert.deepStrictEqual(first.nextDueAt, Option.some(next.nextAttemptAt))
          // With limit 1 the oldest due message goes (early again: its lease ran out); next stays.
          const second = yield* outbox.claimDue(at(base, SECOND), 1, leases[1]!)
          assert.deepStrictEqual(own(second.messages).map((m) => m.id), [early.id])
          assert.deepStrictEqual(second.nextDueAt, Option.some(next.nextAttemptAt))
          const third = yield* outbox.claimDue(at(base, SECOND), 10, leases[1]!)
          assert.deepStrictEqual(own(third.messages).map((m) => m.id), [next.id])
          assert.deepStrictEqual(third.nextDueAt, Option.some(later.nextAttemptAt))
          // A message claimed by an earlier call is pending under its lease, so it counts.
          const fourth = yield* outbox.claimDue(at(base, 2 * SECOND), 10, leases[2]!)
          assert.deepStrictEqual(own(fourth.messages).map((m) => m.id), [later.id])
          assert.deepStrictEqual(fourth.nextDueAt, Option.some(leases[1]!))
          // Settled messages no longer count: delivered, then failed.
          assert.isTrue(yield* outbox.settle(holding(early, leases[1]!), delivered(1, at(base, 2 * SECOND))))
          assert.isTrue(yield* outbox.settle(holding(next, leases[1]!), failed(8)))
          assert.deepStrictEqual(
            (yield* outbox.claimDue(at(base, 2 * SECOND), 10, leases[2]!)).nextDueAt,
            Option.some(leases[2]!)
          )
        }).pipe(Effect.ensuring(retire(mine, leases)))
      })
    })

    it.effect("claimDue answers nextDueAt None when nothing else is pending", () => {
      const now = past.endOfTime
      const lease = at(now, DAY)
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: at(now, -DAY) })
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          // Every pending message anywhere is due by now: one claim large enough takes them all
          // (other tests' leftovers stay leased until `lease`, out of every other test's way).
          const everything = yield* outbox.claimDue(now, 1_000_000, lease)
          assert.isTrue(everything.messages.some((m) => m.id === message.id))
          assert.isTrue(Option.isNone(everything.nextDueAt))
          // Nothing claimed this time: the earliest pending message is one of those held under `lease`.
          const none = yield* outbox.claimDue(now, 0, lease)
          assert.deepStrictEqual(none.messages, [])
          assert.deepStrictEqual(none.nextDueAt, Option.some(lease))
        }).pipe(Effect.ensuring(retire([message], [lease])))
      })
    })

    it.effect("settle: Delivered, Pending and Failed set status, attempts and times", () => {
      const base = past.settle
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const tenant = yield* seedTenant()
        const subscription = yield* seedSubscription(tenant)
        const [toRetry, toDeliver, toFail] = [0, 1, 2].map(() =>
          makeMessage(subscription, { nextAttemptAt: base })
        ) as [OutboxMessage, OutboxMessage, OutboxMessage]
        const mine = [toRetry, toDeliver, toFail]
        const own = ownOf(mine)
        const retryAt = at(base, 5 * MINUTE)
        const lease = at(base, 6 * MINUTE)
        const deliveredAt = at(base, MINUTE)
        yield* outbox.enqueue(mine)
        yield* Effect.gen(function*() {
          assert.isTrue(yield* outbox.settle(holding(toRetry), pending(2, retryAt)))
          assert.isTrue(yield* outbox.settle(holding(toDeliver), delivered(3, deliveredAt)))
          assert.isTrue(yield* outbox.settle(holding(toFail), failed(8)))
          assert.deepStrictEqual(own(yield* drainOutbox(at(base, 4 * MINUTE), lease)), [])
          const [retried] = own(yield* drainOutbox(retryAt, lease))
          assert.isDefined(retried)
          assert.deepStrictEqual(stateOf(retried!), ["pending", 2, lease, undefined])
          const recent = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 10)
          assert.deepStrictEqual(
            recent.map((m) =>
              m.id
            ),
            [toDeliver.id]
          )
          assert.deepStrictEqual(stateOf(recent[0]!), ["delivered", 3, base, deliveredAt])
          assert.strictEqual(recent[0]!.payload, toDeliver.payload)
          assert.isTrue(yield* outbox.settle(holding(retried!), failed(3)))
          // Neither delivered nor failed messages are ever claimed again.
          assert.deepStrictEqual(own(yield* drainOutbox(at(base, 10 * DAY), at(base, 11 * DAY))), [])
        }).pipe(Effect.ensuring(retire(mine, [lease, at(base, 11 * DAY)])))
      })
    })

    it.effect("a claimed message is not claimable again before leaseUntil, but is after", () => {
      const base = ancient.outboxLease
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: base })
        const leases = [at(base, 60 * SECOND), at(base, 90 * SECOND), at(base, 121 * SECOND)]
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const own = ownOf([message])
          assert.strictEqual(own(yield* drainOutbox(base, leases[0]!)).length, 1)
          assert.deepStrictEqual(own(yield* drainOutbox(at(base, 30 * SECOND), leases[1]!)), [])
          const [again] = own(yield* drainOutbox(at(base, 61 * SECOND), leases[2]!))
          assert.isDefined(again)
          assert.deepStrictEqual(stateOf(again!), ["pending", 0, leases[2]!, undefined])
        }).pipe(Effect.ensuring(retire([message], leases)))
      })
    })

    it.effect("a holder whose lease ran out and was claimed again can neither deliver, reschedule nor fail the message, nor reset it once delivered", () => {
      const base = ancient.outboxStale
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const tenant = yield* seedTenant()
        const subscription = yield* seedSubscription(tenant)
        const message = makeMessage(subscription, { nextAttemptAt: base })
        const leases = [at(base, MINUTE), at(base, 2 * MINUTE), at(base, 3 * MINUTE), at(base, 4 * MINUTE)]
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const own = ownOf([message])
          const [stale] = own(yield* drainOutbox(base, leases[0]!))
          // The first holder's lease runs out; a second claimer takes the message.
          const [current] = own(yield* drainOutbox(at(base, MINUTE + SECOND), leases[1]!))
          assert.isDefined(stale)
          assert.isDefined(current)
          assert.isFalse(yield* outbox.settle(holding(stale!), delivered(1, at(base, MINUTE + 2 * SECOND))))
          assert.isFalse(yield* outbox.settle(holding(stale!), pending(1, at(base, HOUR))))
          assert.isFalse(yield* outbox.settle(holding(stale!), failed(1)))
          // The current holder renews its lease (same attempts, later time): it held it untouched.
          assert.isTrue(yield* outbox.settle(holding(current!), pending(0, leases[2]!)))
          assert.isFalse(
            yield* outbox.settle(holding(current!), delivered(1, at(base, MINUTE + 3 * SECOND))),
            "the renewed lease replaced the old one"
          )
          // Once the renewed lease runs out, a claim shows what the stale settles left: nothing changed.
          const [third] = own(yield* drainOutbox(leases[2]!, leases[3]!))
          assert.isDefined(third)
          assert.deepStrictEqual(stateOf(third!), ["pending", 0, leases[3]!, undefined])
          const deliveredAt = at(base, 3 * MINUTE + SECOND)
          assert.isTrue(yield* outbox.settle(holding(third!), delivered(1, deliveredAt)))
          // Once delivered, no holder (stale or not) can set it back to pending or failed.
          for (const held of [stale!, current!, third!]) {
            assert.isFalse(yield* outbox.settle(holding(held), pending(2, at(base, 2 * HOUR))))
            assert.isFalse(yield* outbox.settle(holding(held), failed(2)))
            assert.isFalse(yield* outbox.settle(holding(held), delivered(2, at(base, 2 * HOUR))))
          }
          const recent = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 10)
          assert.deepStrictEqual(recent.map((m) => stateOf(m)), [["delivered", 1, leases[3]!, deliveredAt]])
          assert.deepStrictEqual(own(yield* drainOutbox(at(base, DAY), at(base, DAY + MINUTE))), [])
        }).pipe(Effect.ensuring(retire([message], leases)))
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
        const now = at(base, HOUR)
        const lease = at(base, 2 * HOUR)
        yield* outbox.enqueue(mine)
        yield* Effect.gen(function*() {
          const [first, second] = yield* Effect.all([
            drainOutbox(now, lease, { transaction: true }),
            drainOutbox(now, lease, { transaction: false })
          ], { concurrency: "unbounded" })
          const claimed = [...first, ...second].map((m) => m.id)
          assert.strictEqual(new Set(claimed).size, claimed.length, "a message was handed to both claimers")
          assert.isTrue(mine.every((m) => claimed.includes(m.id)), "every due message is claimed")
        }).pipe(Effect.ensuring(retire(mine, [lease])))
      })
    })

    it.effect("of 20 concurrent settles under one lease exactly one applies", () => {
      const base = past.settle
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: future })
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          // Renewals to distinct instants: once one applied, the others hold a lease that is gone.
          const results = yield* concurrently(
            20,
            (i) => outbox.settle(holding(message), pending(0, at(future, (i + 1) * SECOND)))
          )
          assert.strictEqual(countTrue(results), 1)
          const winner = at(future, (results.indexOf(true) + 1) * SECOND)
          assert.isTrue(yield* outbox.settle(holding(message, winner), delivered(1, base)))
        }).pipe(Effect.ensuring(retire([message], Array.from({ length: 20 }, (_, i) => at(future, (i + 1) * SECOND)))))
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
        const deliveredOnes = [1, 3, 2, 4].map((i) =>
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(i) })
        )
        const excluded = [
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(9) }),
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(8) }),
          makeMessage(subscription, { nextAttemptAt: future, createdAt: created(7), type: "reward.unlocked" }),
          makeMessage(otherSubscription, { nextAttemptAt: future, createdAt: created(6) })
        ]
        yield* outbox.enqueue([...deliveredOnes, ...excluded])
        yield* Effect.gen(function*() {
          for (const m of [...deliveredOnes, excluded[2]!, excluded[3]!]) {
            assert.isTrue(yield* outbox.settle(holding(m), delivered(1, created(10))))
          }
          assert.isTrue(yield* outbox.settle(holding(excluded[1]!), failed(8)))
          const newestFirst = [...deliveredOnes].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).map((
            m
          ) => m.id)
          const recent = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 3)
          assert.deepStrictEqual(recent.map((m) => m.id), newestFirst.slice(0, 3))
          const all = yield* outbox.recentDelivered(tenant.program.id, "milestone.achieved", 10)
          assert.deepStrictEqual(all.map((m) => m.id), newestFirst)
          assert.isTrue(all.every((m) => m.status === "delivered"))
          assert.deepStrictEqual(yield* outbox.recentDelivered(tenant.program.id, "streak.broken", 3), [])
        }).pipe(Effect.ensuring(retire([excluded[0]!])))
      }))

    it.effect("settle records its attempt whether or not it applies; purgeAttempts deletes attempts older than `before` and counts them", () => {
      const base = past.attempts
      return Effect.gen(function*() {
        const outbox = yield* Outbox
        const subscription = yield* seedSubscription(yield* seedTenant())
        const message = makeMessage(subscription, { nextAttemptAt: future })
        const renewed = at(future, 5 * SECOND)
        yield* outbox.enqueue([message])
        yield* Effect.gen(function*() {
          const attempt = (n: number, ms: number) =>
            makeAttempt(message.id, { attempt: n, at: at(base, ms), status: 503, latencyMs: 12.5, error: "HTTP 503" })
          assert.isTrue(yield* outbox.settle(holding(message), pending(1, renewed), attempt(1, 0)))
          // A stale holder's send happened too: its attempt is kept although the settle does not apply.
          assert.isFalse(yield* outbox.settle(holding(message), failed(1), attempt(2, HOUR)))
          assert.isTrue(
            yield* outbox.settle(holding(message, renewed), delivered(3, at(base, 2 * HOUR)), attempt(3, 2 * HOUR))
          )
          // Whatever older attempts exist elsewhere go first; then only this test's are in range.
          yield* outbox.purgeAttempts(base)
          assert.strictEqual(yield* outbox.purgeAttempts(at(base, 90 * MINUTE)), 2)
          assert.strictEqual(yield* outbox.purgeAttempts(at(base, 90 * MINUTE)), 0)
          assert.strictEqual(yield* outbox.purgeAttempts(at(base, 3 * HOUR)), 1)
        }).pipe(Effect.ensuring(retire([message], [renewed])))
      })
    })
  })
