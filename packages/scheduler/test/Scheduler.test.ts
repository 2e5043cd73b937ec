import { assert, describe, it } from "@effect/vitest"
import type { Domain } from "@streaks/core"
import { EventInput, Ingest, OutboundEvents, Ports, SecretBox, Services } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { makeSubscription, seedTenant } from "@streaks/storage-conformance/Fixtures"
import { Effect, Layer, TestClock } from "effect"
import * as Scheduler from "../src/Scheduler.js"

const services = Services.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(MemoryStorage.layer, SecretBox.layerEphemeral, OutboundEvents.layerNoop))
)

/** A live program whose subscription listens to at-risk and broken; one member acted at `at` in `zone`. */
const memberActed = (at: string, zone: string) =>
  Effect.gen(function*() {
    const tenant = yield* seedTenant({ program: { status: "live" } })
    yield* Effect.flatMap(Ports.SubscriptionStore, (s) =>
      s.create(makeSubscription(tenant, { eventTypes: ["streak.at_risk", "streak.broken"] })))
    yield* TestClock.setTime(new Date(at).getTime())
    const action = yield* EventInput.decodeCountAction({ userHash: "member-1", tz: zone })
    const ingest = yield* Ingest.Ingest
    yield* ingest.record({ project: tenant.project, action, auth: { door: "api", programId: tenant.program.id } })
    return tenant
  })

/** Types of the messages waiting in the outbox; they are then marked delivered, so each is seen once. */
const pendingTypes = Effect.gen(function*() {
  const outbox = yield* Ports.Outbox
  const now = new Date(yield* TestClock.currentTimeMillis)
  const { messages } = yield* outbox.claimDue(now, 100, new Date(now.getTime() + 1_000))
  yield* Effect.forEach(
    messages,
    (m) => outbox.settle({ id: m.id, leaseUntil: m.nextAttemptAt }, { _tag: "Delivered", attempts: 1, at: now })
  )
  return messages.map((m) => m.type as Domain.OutboundEventType).sort()
})

describe("Scheduler", () => {
  it.scoped("sweeps every interval: at-risk after the member's local midnight, broken a day later, once each", () =>
    Effect.gen(function*() {
      // 10:00 in Tokyo (UTC+9) on March 10; local midnight of March 11 is 15:00Z on March 10.
      yield* memberActed("2026-03-10T01:00:00Z", "Asia/Tokyo")
      yield* Layer.build(Scheduler.layer({ interval: "1 hour" }))
      yield* TestClock.adjust("13 hours") // 14:00Z: still March 10 in Tokyo
      assert.deepStrictEqual(yield* pendingTypes, [])
      yield* TestClock.adjust("1 hour") // 15:00Z: March 11 began in Tokyo
      assert.deepStrictEqual(yield* pendingTypes, ["streak.at_risk"])
      yield* TestClock.adjust("5 hours")
      assert.deepStrictEqual(yield* pendingTypes, [])
      yield* TestClock.adjust("19 hours") // March 12 began: a full day (March 11) was missed
      assert.deepStrictEqual(yield* pendingTypes, ["streak.broken"])
      yield* TestClock.adjust("48 hours")
      assert.deepStrictEqual(yield* pendingTypes, [])
    }).pipe(Effect.provide(services)))

  it.scoped("after downtime the first sweep catches up with broken only, never at-risk for a day that is over", () =>
    Effect.gen(function*() {
      // 20:00 in Los Angeles (UTC−7 in March) on March 10.
      yield* memberActed("2026-03-11T03:00:00Z", "America/Los_Angeles")
      // The scheduler was down for three days; it starts now and sweeps at once.
      yield* TestClock.adjust("72 hours")
      yield* Layer.build(Scheduler.layer({ interval: "1 hour" }))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* pendingTypes, ["streak.broken"])
    }).pipe(Effect.provide(services)))

  it.scoped("two schedulers sweeping the same store fire each event once", () =>
    Effect.gen(function*() {
      yield* memberActed("2026-03-10T01:00:00Z", "Asia/Tokyo")
      yield* Layer.build(Scheduler.layer({ interval: "1 hour" }))
      yield* Layer.build(Scheduler.layer({ interval: "1 hour" }))
      yield* TestClock.adjust("14 hours")
      assert.deepStrictEqual(yield* pendingTypes, ["streak.at_risk"])
    }).pipe(Effect.provide(services)))

  it.effect("sweep purges idempotency keys older than 24 hours", () =>
    Effect.gen(function*() {
      const tenant = yield* seedTenant()
      const store = yield* Ports.IdempotencyStore
      yield* TestClock.setTime(new Date("2026-03-10T00:00:00Z").getTime())
      yield* store.claim(tenant.project.id, "key-1", new Date("2026-03-10T00:00:00Z"))
      yield* TestClock.adjust("25 hours")
      const result = yield* Scheduler.sweep()
      assert.strictEqual(result.idempotencyKeysPurged, 1)
    }).pipe(Effect.provide(services)))
})
