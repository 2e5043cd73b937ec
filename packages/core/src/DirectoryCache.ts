/**
 * A short-lived in-process cache in front of `DirectoryStore`: every action and state read looks up
 * its project (by siteKey) and program (by event key), which change rarely.
 */
import { type Clock, Duration, Effect, Exit, Layer, Option } from "effect"
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
  readonly until: number
  readonly value: unknown
}

/**
 * Wraps `directory`: `project`, `projectBySiteKey`, `program` and `programByEventKey` answers
 * that found something are kept for `ttl`, by the `Clock` in context when the cache is made
 * (`TestClock` in tests); misses are never kept (so a program created on another replica is
 * usable at once). Every other method passes through.
 *
 * A hit is answered with a finished `Exit` (an `Exit` is an effect), so that the hot paths can go
 * on from it at once, without running it; so a lookup built once and run again later answers what
 * was cached when it was built. Call the method again for a fresh answer.
 */
export const make = (directory: DirectoryStore["Type"], options: Options = {}): Effect.Effect<DirectoryStore["Type"]> =>
  Effect.map(Effect.clock, (clock) => over(directory, clock, options))

const over = (directory: DirectoryStore["Type"], clock: Clock.Clock, options: Options): DirectoryStore["Type"] => {
  const ttl = Duration.toMillis(options.ttl ?? Duration.seconds(1))
  if (ttl <= 0) return directory
  const max = options.maxEntries ?? 10_000
  const entries = new Map<string, Entry>()
  // Bumped by every write, so that a read which started before a write does not keep what it read.
  let generation = 0

  // A hit is decided when the lookup is called (so that it can be a finished `Exit`), a miss's
  // entry when its load has run. `load` is only built on a miss: building a storage call (an SQL
  // statement, say) on every hit cost as much as the lookup.
  const cached = <A>(key: string, load: () => Effect.Effect<Option.Option<A>, StorageError>) => {
    const hit = entries.get(key)
    if (hit !== undefined && hit.until > clock.unsafeCurrentTimeMillis()) return Exit.succeed(Option.some(hit.value as A))
    return Effect.suspend(() => {
      const started = generation
      const loadedAt = clock.unsafeCurrentTimeMillis()
      return Effect.tap(load(), (found) => {
        if (Option.isNone(found) || started !== generation) return
        if (entries.size >= max) entries.clear()
        entries.set(key, { until: loadedAt + ttl, value: found.value })
      })
    })
  }

  /** A write through this process: whatever it changed is read afresh. */
  const write = <A, E>(self: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.ensuring(self, Effect.sync(() => {
      generation++
      entries.clear()
    }))

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
    setWebhookSecretHash: (id, hash) => write(directory.setWebhookSecretHash(id, hash))
  }
}

/** The cached `DirectoryStore` over the one in context. */
export const layer = (options: Options = {}): Layer.Layer<DirectoryStore, never, DirectoryStore> =>
  Layer.effect(DirectoryStore, Effect.flatMap(DirectoryStore, (directory) => make(directory, options)))
