import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref, TestClock } from "effect"
import * as Ingest from "../src/Ingest.js"
import * as IngestStore from "../src/IngestStore.js"
import { makeMilestone } from "@streaks/storage-conformance/Fixtures"
import { at, base, liveTenant, rowOf, server } from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")

/** Every `IngestStore` call, by name, over the store lifted from the in-memory ports. */
const calls = Effect.runSync(Ref.make<ReadonlyArray<string>>([]))

const counted = Layer.effect(
  IngestStore.IngestStore,
  Effect.map(IngestStore.fromPorts, (store) => {
    const note = (name: string) => Ref.update(calls, (all) => [...all, name])
    return {
      load: (request) => Effect.zipRight(note("load"), store.load(request)),
      audience: (programs) => Effect.zipRight(note("audience"), store.audience(programs)),
      history: (keys) => Effect.zipRight(note("history"), store.history(keys)),
      commit: (changes) => Effect.zipRight(note("commit"), store.commit(changes))
    }
  })
)

const layer = Ingest.layer.pipe(Layer.provideMerge(counted), Layer.provideMerge(base))

/** `n` members act at once, each with a new zone and a key; with `crossing`, each crosses a milestone a subscription hears. */
const group = (n: number, crossing: boolean) =>
  Effect.gen(function*() {
    const target = crossing ? 1 : 2
    const t = yield* liveTenant({
      program: { milestones: [makeMilestone({ target, rewardType: "coupon", rewardValue: "DAY1" })] }
    })
    yield* TestClock.setTime(NOON)
    yield* Ref.set(calls, [])
    const members = Array.from({ length: n }, (_, i) => `m${i}`)
    // The first action goes alone (no group is busy); the others share the next group.
    yield* Effect.forEach(
      members,
      (userHash) =>
        server({
          siteKey: t.project.siteKey,
          userHash,
          event: t.program.eventKey,
          tz: "Asia/Tokyo",
          idempotencyKey: `k-${userHash}`
        }),
      { concurrency: "unbounded" }
    )
    for (const m of members) assert.strictEqual((yield* rowOf(t, m, "live"))?.run, 1)
    return yield* Ref.get(calls)
  })

describe("Ingest: a group costs one load and one commit, however many members", () => {
  it.effect("2 and 16 members with keys and zones: the same IngestStore calls; crossing a milestone adds one audience read", () =>
    Effect.gen(function*() {
      const few = yield* group(2, false)
      assert.deepStrictEqual(few, ["load", "commit", "load", "commit"])
      assert.deepStrictEqual(yield* group(16, false), few)
      const crossing = yield* group(2, true)
      assert.deepStrictEqual(crossing, ["load", "audience", "commit", "load", "audience", "commit"])
      assert.deepStrictEqual(yield* group(16, true), crossing)
    }).pipe(Effect.provide(layer)))

  it.effect("a late action reads its key's history once, in the same transaction, and the audience when the joined run crosses a milestone", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      const body = (ts: string) => ({ siteKey: t.project.siteKey, userHash: "late", event: t.program.eventKey, ts })
      yield* server(body("2026-05-10T10:00:00Z"))
      yield* server(body("2026-05-08T10:00:00Z"))
      yield* Ref.set(calls, [])
      assert.deepStrictEqual((yield* server(body("2026-05-09T10:00:00Z"))).body, { ok: true, counted: true })
      // The joined run reaches the tenant's milestone: only the history shows it, so the audience comes after.
      assert.deepStrictEqual(yield* Ref.get(calls), ["load", "history", "audience", "commit"])
      assert.strictEqual((yield* rowOf(t, "late", "live"))?.run, 3, "the late day joins the two runs")
    }).pipe(Effect.provide(layer)))
})
