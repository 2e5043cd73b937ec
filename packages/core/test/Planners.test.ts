/**
 * The due-check and alias-merge planners as pure functions: data in, changes and messages out,
 * `Needs` when something was not read, and the one hearing rule (`OutboundEvents.hearing`).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Program } from "../src/Domain.js"
import { StreakKey } from "../src/Domain.js"
import * as DuePlan from "../src/DuePlan.js"
import * as Experiments from "../src/Experiments.js"
import * as Ids from "../src/Ids.js"
import type { UserHash } from "../src/Ids.js"
import * as MergePlan from "../src/MergePlan.js"
import * as OutboundEvents from "../src/OutboundEvents.js"
import {
  makeAchievement,
  makeExperiment,
  makeProgram,
  makeProject,
  makeRow,
  makeSubscription,
  makeWorkspace
} from "@streaks/storage-conformance/Fixtures"

const workspace = makeWorkspace()
const project = makeProject(workspace.id)
const live = makeProgram(project.id, { status: "live" })
const tenant = { workspace, project, program: live }
const listening = makeSubscription(tenant)
const deaf = makeSubscription(tenant, { eventTypes: ["milestone.achieved"] })
const messageId = () => Ids.makeAt("MessageId", 0)
const at = (iso: string) => new Date(iso)

const keyOf = (program: Program, userHash: string, ledger: "live" | "test" = "live") =>
  new StreakKey({
    projectId: project.id,
    programId: program.id,
    userHash: userHash as UserHash,
    ledger
  })

/** A row active on 2026-05-09 only, due for its at-risk at the start of 2026-05-10 (UTC). */
const dueRow = (program: Program, userHash: string, ledger: "live" | "test" = "live") =>
  makeRow(keyOf(program, userHash, ledger), {
    lastActiveDay: "2026-05-09" as never,
    run: 1,
    best: 1,
    dueAt: at("2026-05-10T00:00:00Z")
  })

const now = at("2026-05-10T01:00:00Z")

describe("DuePlan", () => {
  it("asks for the rows' programs and projects first, then for the audience of programs whose events fire", () => {
    const rows = [dueRow(live, "u1")]
    const first = DuePlan.plan({
      now,
      rows,
      programs: new Map(),
      projects: new Map(),
      audience: OutboundEvents.noAudience,
      messageId
    })
    assert.deepStrictEqual(first, { _tag: "Needs", programs: [live.id], projects: [project.id], audience: [] })
    const second = DuePlan.plan({
      now,
      rows,
      programs: new Map([[live.id, live]]),
      projects: new Map([[project.id, project]]),
      audience: OutboundEvents.noAudience,
      messageId
    })
    assert.deepStrictEqual(second, { _tag: "Needs", programs: [], projects: [], audience: [live.id] })
  })

  it("an event goes to the subscriptions listening to its type; the row moves on past now", () => {
    const result = DuePlan.plan({
      now,
      rows: [dueRow(live, "u1")],
      programs: new Map([[live.id, live]]),
      projects: new Map([[project.id, project]]),
      audience: { experiments: new Map(), subscriptions: new Map([[live.id, [listening, deaf]]]) },
      messageId
    })
    assert.strictEqual(result._tag, "Planned")
    if (result._tag !== "Planned") return
    assert.deepStrictEqual(result.fired, { atRisk: 1, broken: 0, freezesUsed: 0 })
    assert.deepStrictEqual(result.outbox.map((m) => [m.subscriptionId, m.type]), [[listening.id, "streak.at_risk"]])
    assert.strictEqual(result.rows[0]!.atRiskNotifiedFor, "2026-05-10")
    assert.isTrue(result.rows[0]!.dueAt!.getTime() > now.getTime())
  })

  it("a test program, the test ledger and a control member fire nothing and need no audience; their rows move on", () => {
    const inTest = makeProgram(project.id, { status: "test" })
    const experiment = makeExperiment(live, { holdoutPercent: 50 })
    const control = Array.from({ length: 50 }, (_, i) => `c${i}`).find((u) =>
      Experiments.isControl(experiment.id, u, 50)
    )!
    const result = DuePlan.plan({
      now,
      rows: [dueRow(inTest, "u1", "test"), dueRow(live, "u2", "test"), dueRow(live, control)],
      programs: new Map([[inTest.id, inTest], [live.id, live]]),
      projects: new Map([[project.id, project]]),
      audience: { experiments: new Map([[live.id, experiment]]), subscriptions: new Map([[live.id, [listening]]]) },
      messageId
    })
    assert.strictEqual(result._tag, "Planned")
    if (result._tag !== "Planned") return
    assert.deepStrictEqual(result.fired, { atRisk: 0, broken: 0, freezesUsed: 0 })
    assert.deepStrictEqual(result.outbox, [])
    assert.deepStrictEqual(result.rows.map((r) => String(r.atRiskNotifiedFor)), [
      "2026-05-10",
      "2026-05-10",
      "2026-05-10"
    ])
  })
})

describe("MergePlan", () => {
  const program = makeProgram(project.id, { status: "live" })
  const [three] = program.milestones
  const streak = (userHash: string, days: ReadonlyArray<string>, achieved: ReadonlyArray<string> = []) => {
    const key = keyOf(program, userHash)
    return {
      key,
      row: makeRow(key),
      days: days as never,
      achieved: achieved.map((id) => makeAchievement(key, id as Ids.MilestoneId))
    }
  }
  const input = (pairs: MergePlan.Input["pairs"], audience = OutboundEvents.noAudience): MergePlan.Input => ({
    project,
    member: "member" as UserHash,
    zone: "UTC",
    now: at("2026-05-10T12:00:00Z"),
    pairs,
    audience,
    messageId
  })

  it("unions the days, recomputes the member's row, and asks for the audience when a milestone is reached", () => {
    const pair = {
      from: streak("anon", ["2026-05-08", "2026-05-09"]),
      to: streak("member", ["2026-05-10"]),
      program
    }
    assert.deepStrictEqual(MergePlan.plan(input([pair])), { _tag: "Needs", audience: [program.id] })
    const result = MergePlan.plan(
      input([pair], { experiments: new Map(), subscriptions: new Map([[program.id, [listening]]]) })
    )
    assert.strictEqual(result._tag, "Planned")
    if (result._tag !== "Planned") return
    const { changes } = result
    assert.deepStrictEqual(changes.days.map((d) => d.day), ["2026-05-08", "2026-05-09"])
    assert.deepStrictEqual(changes.rows.map((r) => [String(r.userHash), r.run, String(r.lastActiveDay)]), [[
      "member",
      3,
      "2026-05-10"
    ]])
    assert.deepStrictEqual(changes.achievements.map((a) => [a.userHash, a.milestoneId]), [["member", three!.id]])
    assert.deepStrictEqual(changes.outbox.map((m) => m.type), ["milestone.achieved"])
    assert.deepStrictEqual(changes.removed, [pair.from.key])
  })

  it("moves the anonymous id's achievements the member lacks; days that add nothing change no row", () => {
    const pair = {
      from: streak("anon", ["2026-05-10"], [three!.id]),
      to: streak("member", ["2026-05-10"]),
      program
    }
    const result = MergePlan.plan(input([pair]))
    assert.strictEqual(result._tag, "Planned")
    if (result._tag !== "Planned") return
    assert.deepStrictEqual(result.changes.days, [])
    assert.deepStrictEqual(result.changes.rows, [])
    assert.deepStrictEqual(result.changes.achievements.map((a) => [a.userHash, a.milestoneId]), [["member", three!.id]])
    assert.deepStrictEqual(result.changes.outbox, [])
  })
})
