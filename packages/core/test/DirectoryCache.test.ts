import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option, TestClock } from "effect"
import * as DirectoryCache from "../src/DirectoryCache.js"
import * as Finished from "../src/Finished.js"
import { DirectoryStore } from "../src/Ports.js"
import { layerMemory, makeProject, seedTenant } from "../src/testing.js"

const cachedOver = Effect.flatMap(DirectoryStore, (store) => Effect.map(DirectoryCache.make(store), (cache) => ({ store, cache })))

describe("DirectoryCache", () => {
  it.effect("a found program is served from memory for the ttl, then read afresh", () =>
    Effect.gen(function*() {
      const { cache, store } = yield* cachedOver
      const { program, project } = yield* seedTenant()
      assert.strictEqual(Option.getOrThrow(yield* cache.programByEventKey(project.id, program.eventKey)).status, "test")
      // Changed behind the cache's back, as another replica would.
      yield* store.setProgramStatus(program.id, "live")
      yield* TestClock.adjust(Duration.millis(999))
      assert.strictEqual(Option.getOrThrow(yield* cache.programByEventKey(project.id, program.eventKey)).status, "test")
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(Option.getOrThrow(yield* cache.programByEventKey(project.id, program.eventKey)).status, "live")
    }).pipe(Effect.provide(layerMemory)))

  it.effect("a hit is a finished exit, which the hot paths go on from without a fiber; a miss is not", () =>
    Effect.gen(function*() {
      const { cache } = yield* cachedOver
      const { program, project } = yield* seedTenant()
      assert.isUndefined(Finished.exitOf(cache.projectBySiteKey(project.siteKey)), "not yet cached")
      yield* cache.projectBySiteKey(project.siteKey)
      const hit = Finished.exitOf(cache.projectBySiteKey(project.siteKey))
      assert.strictEqual(hit && Exit.isSuccess(hit) ? Option.getOrThrow(hit.value).id : undefined, project.id)
      yield* TestClock.adjust(Duration.seconds(1))
      assert.isUndefined(Finished.exitOf(cache.projectBySiteKey(project.siteKey)), "expired")
      assert.isUndefined(Finished.exitOf(cache.programByEventKey(project.id, program.eventKey)))
    }).pipe(Effect.provide(layerMemory)))

  it.effect("a write through the cache is seen at once by every cached read", () =>
    Effect.gen(function*() {
      const { cache } = yield* cachedOver
      const { program, project } = yield* seedTenant()
      yield* cache.program(program.id)
      yield* cache.programByEventKey(project.id, program.eventKey)
      yield* cache.setWebhookSecretHash(program.id, "new-hash")
      assert.strictEqual(Option.getOrThrow(yield* cache.program(program.id)).webhookSecretHash, "new-hash")
      assert.strictEqual(
        Option.getOrThrow(yield* cache.programByEventKey(project.id, program.eventKey)).webhookSecretHash,
        "new-hash"
      )
    }).pipe(Effect.provide(layerMemory)))

  it.effect("a miss is not kept: a project created elsewhere is found at once", () =>
    Effect.gen(function*() {
      const { cache, store } = yield* cachedOver
      const { workspace } = yield* seedTenant()
      const project = makeProject(workspace.id)
      assert.isTrue(Option.isNone(yield* cache.projectBySiteKey(project.siteKey)))
      yield* store.createProject(project)
      assert.strictEqual(Option.getOrThrow(yield* cache.projectBySiteKey(project.siteKey)).id, project.id)
    }).pipe(Effect.provide(layerMemory)))

  it.effect("a zero ttl turns the cache off", () =>
    Effect.gen(function*() {
      const store = yield* DirectoryStore
      const cache = yield* DirectoryCache.make(store, { ttl: Duration.zero })
      const { program } = yield* seedTenant()
      yield* cache.program(program.id)
      yield* store.setProgramStatus(program.id, "live")
      assert.strictEqual(Option.getOrThrow(yield* cache.program(program.id)).status, "live")
    }).pipe(Effect.provide(layerMemory)))
})
