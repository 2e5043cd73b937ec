import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import { at, layer, logged, rowOf, server, tenant } from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")

const keyed = (t: Tenant, userHash: string, idempotencyKey: string) => ({
  siteKey: t.project.siteKey,
  userHash,
  event: t.program.eventKey,
  idempotencyKey
})

const stores = [{ name: "in memory (keys claimed inside the group's transaction)", layer }]

describe("Ingest: keyed actions that arrive together (docs/api.md#idempotency)", () => {
  for (const store of stores) {
    it.effect(`on a store ${store.name}: each key is processed once, a key sent twice at once once, and a later repeat replays`, () =>
      Effect.gen(function*() {
        const t = yield* tenant({ program: { status: "live" } })
        yield* TestClock.setTime(NOON)
        // k9 goes first and alone (no batch runs); k0 and its repeats then share a batch and its claim.
        const bodies = [
          ...Array.from({ length: 10 }, (_, i) => keyed(t, `u${9 - i}`, `k${9 - i}`)),
          ...Array.from({ length: 4 }, (_, i) => keyed(t, `again${i}`, "k0"))
        ]
        const results = yield* Effect.forEach(bodies, (b) => Effect.either(server(b)), { concurrency: "unbounded" })
        for (const r of results.slice(0, 10)) {
          assert.deepStrictEqual(r._tag === "Right" ? r.right.body : r.left._tag, { ok: true, counted: true })
        }
        // The repeats of k0 arrive with it: in progress, or its answer replayed; never a second action.
        for (const r of results.slice(10)) {
          if (r._tag === "Left") assert.strictEqual(r.left._tag, "IdempotencyKeyInProgress")
          else assert.deepStrictEqual(r.right.body, { ok: true, counted: true })
        }
        for (let i = 0; i < 4; i++) assert.isUndefined(yield* rowOf(t, `again${i}`, "live"))
        assert.strictEqual((yield* logged(t, "live"))[0]?.count, 10)

        yield* TestClock.setTime(NOON + 60_000)
        assert.deepStrictEqual((yield* server(keyed(t, "late", "k5"))).body, { ok: true, counted: true })
        assert.isUndefined(yield* rowOf(t, "late", "live"))
        assert.strictEqual((yield* logged(t, "live"))[0]?.count, 10)
      }).pipe(Effect.provide(store.layer)))
  }
})
