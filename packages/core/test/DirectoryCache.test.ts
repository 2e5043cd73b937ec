import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Option, TestClock } from "effect"
import * as DirectoryCache from "../src/DirectoryCache.js"
import * as Finished from "../src/Finished.js"
import * as MemoryStorage from "../src/MemoryStorage.js"
import { DirectoryStore } from "../src/Ports.js"
import { makeProgram, makeProject, seedTenant } from "@streaks/storage-conformance/Fixtures"

/**
 * The store in context with its program-by-event-key lookups counted; `pause` has each one wait
 * that long on the (test) clock after reading, so that a test can act while lookups are under way.
 */
const countedOver = (pause = Duration.zero) =>
  Effect.flatMap(DirectoryStore, (store) => {
    const counted = {
      loads: 0,
      store: {
        ...store,
        programByEventKey: (projectId, eventKey) => {
          counted.loads++
          return Effect.zipLeft(store.programByEventKey(projectId, eventKey), Effect.sleep(pause))
        }
      } satisfies DirectoryStore["Type"]
    }
    return Effect.map(DirectoryCache.make(counted.store), (cache) => ({ counted, store, cache }))
  })

/** Lets the cache's background reads run (they go on the scheduler, not under the test's clock). */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

const cachedOver = Effect.flatMap(
  DirectoryStore,
  (store) => Effect.map(DirectoryCache.make(store), (cache) => ({ store, cache }))
)

describe("DirectoryCache", () => {
  it.scoped("a found program is served from memory for the ttl, then read afresh", () =>
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
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a hit is a finished exit, which the hot paths go on from without a fiber; a miss is not", () =>
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
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a write through the cache is seen at once by every cached read", () =>
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
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a miss is not kept: a project created elsewhere is found at once", () =>
    Effect.gen(function*() {
      const { cache, store } = yield* cachedOver
      const { workspace } = yield* seedTenant()
      const project = makeProject(workspace.id)
      assert.isTrue(Option.isNone(yield* cache.projectBySiteKey(project.siteKey)))
      yield* store.createProject(project)
      assert.strictEqual(Option.getOrThrow(yield* cache.projectBySiteKey(project.siteKey)).id, project.id)
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a zero ttl turns the cache off", () =>
    Effect.gen(function*() {
      const store = yield* DirectoryStore
      const cache = yield* DirectoryCache.make(store, { ttl: Duration.zero })
      const { program } = yield* seedTenant()
      yield* cache.program(program.id)
      yield* store.setProgramStatus(program.id, "live")
      assert.strictEqual(Option.getOrThrow(yield* cache.program(program.id)).status, "live")
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a key in use is read afresh in the background before it expires, and no caller waits for it", () =>
    Effect.gen(function*() {
      const { cache, counted, store } = yield* countedOver()
      const { program, project } = yield* seedTenant()
      const lookup = () => cache.programByEventKey(project.id, program.eventKey)
      yield* lookup()
      yield* store.setProgramStatus(program.id, "live")
      // Before the last quarter of the ttl: from memory, nothing read.
      yield* TestClock.adjust(Duration.millis(749))
      yield* lookup()
      yield* settle
      assert.strictEqual(counted.loads, 1)
      // In the last quarter: still answered from memory at once, and read afresh behind it.
      yield* TestClock.adjust(Duration.millis(1))
      const hit = Finished.exitOf(lookup())
      assert.strictEqual(hit && Exit.isSuccess(hit) ? Option.getOrThrow(hit.value).status : undefined, "test")
      yield* settle
      assert.strictEqual(counted.loads, 2)
      // Past the first read's ttl the key has not expired: the fresh read answers, from memory.
      yield* TestClock.adjust(Duration.millis(400))
      const later = Finished.exitOf(lookup())
      assert.strictEqual(later && Exit.isSuccess(later) ? Option.getOrThrow(later.value).status : undefined, "live")
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("callers that miss the same key at once share one lookup", () =>
    Effect.gen(function*() {
      const { cache, counted } = yield* countedOver(Duration.millis(10))
      const { program, project } = yield* seedTenant()
      const callers = yield* Effect.forkAll(
        Array.from({ length: 10 }, () => cache.programByEventKey(project.id, program.eventKey))
      )
      yield* settle
      yield* TestClock.adjust(Duration.millis(10))
      const found = yield* Fiber.join(callers)
      assert.deepStrictEqual(found.map((p) => Option.getOrThrow(p).id), Array(10).fill(program.id))
      assert.strictEqual(counted.loads, 1)
      // A caller that comes later, once the first lookup is kept, reads nothing.
      yield* cache.programByEventKey(project.id, program.eventKey)
      assert.strictEqual(counted.loads, 1)
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.scoped("a caller after a write does not join a lookup that read before it", () =>
    Effect.gen(function*() {
      const { cache, counted } = yield* countedOver(Duration.millis(10))
      const { project } = yield* seedTenant()
      const program = makeProgram(project.id, { eventKey: "created_meanwhile" })
      const before = yield* Effect.fork(cache.programByEventKey(project.id, program.eventKey))
      yield* settle
      assert.strictEqual(counted.loads, 1)
      yield* cache.createProgram(program)
      const after = yield* Effect.fork(cache.programByEventKey(project.id, program.eventKey))
      yield* settle
      yield* TestClock.adjust(Duration.millis(10))
      assert.isTrue(Option.isNone(yield* Fiber.join(before)), "read before the program existed")
      assert.strictEqual(Option.getOrThrow(yield* Fiber.join(after)).id, program.id)
      assert.strictEqual(counted.loads, 2)
    }).pipe(Effect.provide(MemoryStorage.layer)))
})
