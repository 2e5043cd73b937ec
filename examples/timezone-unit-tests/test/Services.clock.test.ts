/**
 * The whole engine under `TestClock`: core services on the in-memory adapter, driven through
 * `Ingest` (the in-process "api" door) and read back through `StateQuery`, while the test moves
 * the clock across a member's local midnight. Every service reads time from `Clock`, so nothing
 * here waits and nothing depends on when the test runs.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  DueChecks,
  EventInput,
  Ids,
  Ingest,
  OutboundEvents,
  Provisioning,
  SecretBox,
  Services,
  StateQuery
} from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { Effect, Layer, TestClock } from "effect"

/** Every core service on a fresh in-memory store (provided per test: each test starts empty). */
const StreaksTest = Services.layer.pipe(
  Layer.provide(OutboundEvents.layerNoop),
  Layer.provide(SecretBox.layerEphemeral),
  Layer.provide(MemoryStorage.layer)
)

const setClock = (iso: string) => TestClock.setTime(new Date(iso).getTime())

/** A live program in a project whose default zone is UTC. */
const provision = Effect.gen(function*() {
  const provisioning = yield* Provisioning.Provisioning
  const workspace = yield* provisioning.createWorkspace({ name: "Acme", plan: "starter" })
  const { project } = yield* provisioning.createProject({ workspaceId: workspace.id, name: "App", allowedOrigins: [] })
  const { program } = yield* provisioning.createProgram({
    projectId: project.id,
    name: "Daily lesson",
    eventKey: "lesson_completed",
    milestones: []
  })
  yield* provisioning.setProgramStatus(program.id, "live")
  return { project, program }
})

describe("a member in America/Santiago across the skipped midnight of 2024-09-08", () => {
  it.effect("counts one day on each side, falls at risk at 04:00Z, and breaks when the 10th begins", () =>
    Effect.gen(function*() {
      yield* setClock("2024-09-07T12:00:00Z")
      const { program, project } = yield* provision
      const ingest = yield* Ingest.Ingest
      const state = yield* StateQuery.StateQuery
      const dueChecks = yield* DueChecks.DueChecks
      const member = "member-in-santiago"

      /** The member completes a lesson now (Clock time); `tz` is sent once and then remembered. */
      const act = (tz?: string) =>
        Effect.gen(function*() {
          const action = yield* EventInput.decodeCountAction({ userHash: member, ...(tz === undefined ? {} : { tz }) })
          const answer = yield* ingest.record({
            project,
            action,
            auth: { door: "api", programId: Ids.unsafe("ProgramId", program.id) }
          })
          return answer.body
        })
      const streak = state.memberStreak(program.id, member)

      // 23:30 on Saturday the 7th in Santiago (-04).
      yield* setClock("2024-09-08T03:30:00Z")
      assert.deepStrictEqual(yield* act("America/Santiago"), { counted: true })
      assert.deepInclude(yield* streak, { current: 1, todayDone: true, lastActiveDate: "2024-09-07" })

      // One instant before the gap nothing is due; at 04:00Z (01:00 on the 8th, -03) the day is owed.
      yield* setClock("2024-09-08T03:59:59.999Z")
      assert.deepStrictEqual(yield* dueChecks.run(), { atRisk: 0, broken: 0, freezesUsed: 0 })
      yield* setClock("2024-09-08T04:00:00Z")
      assert.deepInclude(yield* streak, { current: 1, todayDone: false, pending: true })
      assert.deepStrictEqual(yield* dueChecks.run(), { atRisk: 1, broken: 0, freezesUsed: 0 })

      // 01:10 on the 8th: the second day, with no tz sent (the member's zone is remembered).
      yield* setClock("2024-09-08T04:10:00Z")
      assert.deepStrictEqual(yield* act(), { counted: true })
      assert.deepInclude(yield* streak, { current: 2, todayDone: true, lastActiveDate: "2024-09-08" })

      // 23:59 on the 9th: still alive, the 9th is owed. 00:00 on the 10th (03:00Z): broken.
      yield* setClock("2024-09-10T02:59:00Z")
      assert.deepInclude(yield* streak, { current: 2, pending: true })
      yield* setClock("2024-09-10T03:00:00Z")
      assert.deepInclude(yield* streak, { current: 0, best: 2, pending: false })
      assert.deepStrictEqual(yield* dueChecks.run(), { atRisk: 0, broken: 1, freezesUsed: 0 })
    }).pipe(Effect.provide(StreaksTest)))
})

describe("the same instant for members in different zones", () => {
  it.effect("an action at 10:30Z counts for 2024-06-16 on Kiritimati and 2024-06-14 in Pago Pago", () =>
    Effect.gen(function*() {
      yield* setClock("2024-06-15T10:30:00Z")
      const { program, project } = yield* provision
      const ingest = yield* Ingest.Ingest
      const state = yield* StateQuery.StateQuery
      const auth = { door: "api", programId: Ids.unsafe("ProgramId", program.id) } as const
      for (const [member, tz] of [["islander", "Pacific/Kiritimati"], ["samoan", "Pacific/Pago_Pago"]] as const) {
        const action = yield* EventInput.decodeCountAction({ userHash: member, tz })
        yield* ingest.record({ project, action, auth })
      }
      assert.strictEqual((yield* state.memberStreak(program.id, "islander")).lastActiveDate, "2024-06-16")
      assert.strictEqual((yield* state.memberStreak(program.id, "samoan")).lastActiveDate, "2024-06-14")
    }).pipe(Effect.provide(StreaksTest)))
})
