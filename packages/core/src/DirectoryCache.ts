/**
 * A short-lived in-process cache in front of `DirectoryStore`: every action and state read looks up
 * its project (by siteKey) and program (by event key), which change rarely.
 */
import { type Clock, Duration, Effect, type Fiber, FiberSet, Layer, Option, type Scope } from "effect"
import type { Program, Project } from "./Domain.js"
import type { StorageError } from "./Errors.js"
import { DirectoryStore } from "./Ports.js"

export interface Options {
  /**
   * How long a found project or program is served from memory (default 1 second). A change made
   * through this process is seen at once (every write empties the cache); one made by another
   * replica is seen within this time. `Duration.zero` turns the cache off.
   */
  readonly ttl?: Duration.DurationInput
  /** Most entries kept (default 10,000); the cache starts over when full. */
  readonly maxEntries?: number
}

interface Entry {
  /** When the load that found it started: it answers for the store as of then. */
  readonly loadedAt: number
  readonly value: unknown
}

type Load<A> = () => Effect.Effect<Option.Option<A>, StorageError>

/**
 * Wraps `directory`: `project`, `projectBySiteKey`, `program` and `programByEventKey` answers
 * that found something are kept for `ttl`, by the `Clock` in context when the cache is made
 * (`TestClock` in tests); misses are never kept (so a program created on another replica is
 * usable at once). Every other method passes through.
 *
 * A key in use never expires under its callers: a hit in the last quarter of its `ttl` reads it
 * afresh in the background (the hit answers at once, from memory), so that each replica reads its
 * busy keys about once every three quarters of a `ttl` and no action waits on the lookup. Callers
 * that miss the same key at once share one lookup, rather than each sending its own to the store.
 * Background reads run in the scope the cache is made in, and stop with it.
 *
 * A hit is decided when the method is called: a lookup built once and run again later answers
 * what was cached when it was built. Call the method again for a fresh answer.
 */
export const make = (
  directory: DirectoryStore["Type"],
  options: Options = {}
): Effect.Effect<DirectoryStore["Type"], never, Scope.Scope> =>
  Effect.zipWith(Effect.clock, FiberSet.makeRuntime<never>(), (clock, run) => over(directory, clock, run, options))

type Run = <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>

const over = (
  directory: DirectoryStore["Type"],
  clock: Clock.Clock,
  run: Run,
  options: Options
): DirectoryStore["Type"] => {
  const ttl = Duration.toMillis(options.ttl ?? Duration.seconds(1))
  if (ttl <= 0) return directory
  // Late enough to read a busy key little more often than it expires, early enough for a lookup
  // slowed by load to be back before it does.
  const refreshAfter = ttl * 0.75
  const max = options.maxEntries ?? 10_000
  const entries = new Map<string, Entry>()
  /** The lookup of each key under way, which callers that miss it join rather than repeat. */
  const loading = new Map<string, Fiber.RuntimeFiber<Option.Option<unknown>, StorageError>>()
  // Bumped by every write, so that a read which started before a write does not keep what it read.
  let generation = 0

  const start = <A>(key: string, load: Load<A>): Fiber.RuntimeFiber<Option.Option<A>, StorageError> => {
    const started = generation
    const loadedAt = clock.unsafeCurrentTimeMillis()
    const fiber = run(Effect.tap(load(), (found) => {
      if (Option.isNone(found) || started !== generation) return
      if (entries.size >= max) entries.clear()
      entries.set(key, { loadedAt, value: found.value })
    }))
    loading.set(key, fiber)
    fiber.addObserver(() => {
      if (loading.get(key) === fiber) loading.delete(key)
    })
    return fiber
  }

  // A hit is decided when the lookup is called (no suspension on the hot path), a miss's entry
  // when its load has run. `load` is only built on a miss or a refresh: building a storage
  // call (an SQL statement, say) on every hit cost as much as the lookup.
  const cached = <A>(key: string, load: Load<A>): Effect.Effect<Option.Option<A>, StorageError> => {
    const hit = entries.get(key)
    if (hit !== undefined) {
      const age = clock.unsafeCurrentTimeMillis() - hit.loadedAt
      if (age < ttl) {
        // Not waited for: a failed refresh leaves the entry to expire, and the miss after it
        // reports the failure.
        if (age >= refreshAfter && !loading.has(key)) start(key, load)
        return Effect.succeed(Option.some(hit.value as A))
      }
    }
    return Effect.suspend(() => {
      const under = loading.get(key) as Fiber.RuntimeFiber<Option.Option<A>, StorageError> | undefined
      // Joining does not tie the lookup to this caller: were it interrupted, the others still get it.
      return Effect.fromFiber(under ?? start(key, load))
    })
  }

  /** A write through this process: whatever it changed is read afresh, lookups under way included. */
  const write = <A, E>(self: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.ensuring(
      self,
      Effect.sync(() => {
        generation++
        entries.clear()
        loading.clear()
      })
    )

  return {
    ...directory,
    project: (id) => cached<Project>(`project ${id}`, () => directory.project(id)),
    projectBySiteKey: (siteKey) => cached<Project>(`site ${siteKey}`, () => directory.projectBySiteKey(siteKey)),
    program: (id) => cached<Program>(`program ${id}`, () => directory.program(id)),
    programByEventKey: (projectId, eventKey) =>
      cached<Program>(`event ${projectId} ${eventKey}`, () => directory.programByEventKey(projectId, eventKey)),
    createWorkspace: (w) => write(directory.createWorkspace(w)),
    setPlan: (id, plan) => write(directory.setPlan(id, plan)),
    createProject: (p) => write(directory.createProject(p)),
    createProgram: (p) => write(directory.createProgram(p)),
    setProgramStatus: (id, status) => write(directory.setProgramStatus(id, status)),
    goLive: (id) => write(directory.goLive(id)),
    setWebhookSecretHash: (id, hash) => write(directory.setWebhookSecretHash(id, hash)),
    setProgramPolicy: (id, policy, mode) => write(directory.setProgramPolicy(id, policy, mode)),
    changeProgramOutages: (id, change) => write(directory.changeProgramOutages(id, change))
  }
}

/** The cached `DirectoryStore` over the one in context; its background reads end with the layer. */
export const layer = (options: Options = {}): Layer.Layer<DirectoryStore, never, DirectoryStore> =>
  Layer.scoped(DirectoryStore, Effect.flatMap(DirectoryStore, (directory) => make(directory, options)))
